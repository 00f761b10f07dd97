"""The optimized Unigram trainer, steppable round by round (``UnigramTrainer``).

The rules are ``rule``'s; the work is the compiled ``engine.train.unigram._unigram_core``'s:
the seeds (a suffix sort of the distinct words), every word's lattice, forward-backward for
the E-step, the M-step, and the Viterbi counts and second-best segmentations pruning needs.
This module runs the rounds: ``SUB_ITERATIONS`` of EM, then a pruning that keeps
``SHRINKING_FACTOR`` of the pieces by loss, until at most ``DESIRED_FACTOR`` × the
vocabulary size are left; then a final step keeps the best scores. Each round returns a
``UnigramRound``.

Training runs over the distinct ``▁``-words weighted by count: a piece never crosses a word,
so a sentence's likelihood is the product of its words' and every sum EM and pruning take
over the sentences is the same over the words. The E-step cuts the words into parts that
threads run (the core runs without the GIL), each summing its own expected counts, added
in order. Rounds are deterministic, whatever the threads: ``goto(k)`` back seeds again and
replays them.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from typing import TYPE_CHECKING

from engine.errors import CorpusError
from engine.train.unigram._unigram_core import Core
from engine.train.unigram.events import RemovedPiece, ScoreChange, UnigramRound
from engine.train.unigram.rule import (
    EXPECTED_THRESHOLD,
    KIND_NAMES,
    MAX_PIECE_LENGTH,
    SEED_SIZE,
    SPECIAL_TOKENS,
    SPLIT,
    SUB_ITERATIONS,
    check_vocab_size,
    count_file_words,
    count_words,
    desired_size,
    final_order,
    finalized,
    pruned,
    script_classes,
    shrunk_size,
)

if TYPE_CHECKING:
    from engine.corpus.counting import Progress

CHANGES = 10
"""Score changes a round records."""
PARTS = 4
"""The E-step cuts the words into this many parts (fewer for a small corpus), each summing
its own expected counts, added in order: the same sums however many threads run them."""
PART_WORDS = 2048
"""The fewest words of a part."""


class UnigramTrainer:
    """Unigram training, one round at a time, from word counts (``rule.count_words``)."""

    size_unit = "chars"
    """What ``corpus_size`` counts: the characters of the words, ``▁`` included."""
    _core: Core

    def __init__(
        self,
        word_counts: Mapping[str, int],
        vocab_size: int,
        special_tokens: Sequence[str] = SPECIAL_TOKENS,
        seed_size: int = SEED_SIZE,
        threads: int | None = None,
        progress: Progress | None = None,
    ) -> None:
        self._word_counts = word_counts
        """The distinct ``▁``-words and their counts (not copied: a corpus's can be large)."""
        self.vocab_size = vocab_size
        self.special_tokens = tuple(special_tokens)
        self.seed_size = seed_size
        self.threads = max(1, threads if threads is not None else min(os.cpu_count() or 1, PARTS))
        self.progress = progress
        self.stop_requested = False
        """Set (from a signal handler or another thread) to end ``run()`` at a round's end."""
        self.desired = desired_size(vocab_size)
        self._build()

    @classmethod
    def from_text(cls, text: str, vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS) -> UnigramTrainer:
        return cls(count_words([text]), vocab_size, special_tokens)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        vocab_size: int,
        special_tokens: Sequence[str] = SPECIAL_TOKENS,
        progress: Progress | None = None,
        errors: str = "strict",
        threads: int | None = None,
    ) -> UnigramTrainer:
        return cls(count_file_words(path, progress, errors), vocab_size, special_tokens, threads=threads, progress=progress)

    def _build(self) -> None:
        """Lay out the words and seed the pieces: the state before any round."""
        words = list(self._word_counts)
        if not words:
            raise CorpusError("no words to train on")
        ends = array("q", accumulate(map(len, words)))
        self._core = Core("".join(words).encode("utf-32-le"), ends, array("q", self._word_counts.values()), MAX_PIECE_LENGTH)
        self.characters = self._core.characters()
        """The corpus's characters, most frequent first: the first pieces, always kept."""
        check_vocab_size(self.vocab_size, self.special_tokens, len(self.characters))
        self.seeds = self._core.seed(array("i", script_classes(self.characters)), self.seed_size)
        """How many substrings were seeded beside the characters."""
        self.rounds_done = 0
        self.finished = False
        self.history: list[tuple[float, int]] = []
        """Each round's log-likelihood and the vocabulary size it left."""
        self.corpus_size = self._core.corpus_chars

    # -- state the app reads --------------------------------------------------------------

    @property
    def size(self) -> int:
        """Pieces now, characters included (special tokens not)."""
        return self._core.size

    @property
    def words(self) -> int:
        """Distinct words."""
        return self._core.words

    def pieces(self) -> list[tuple[str, float]]:
        """Every piece now with its log-probability, in the trainer's order (characters first)."""
        return list(zip(self._core.pieces(), memoryview(self._core.scores()).cast("d").tolist(), strict=True))

    def corpus_tokens(self) -> int:
        """The corpus's tokens on the best paths of the pieces now: the compression so far
        is ``corpus_size / corpus_tokens()`` (a round's ``tokens`` are before its pruning)."""
        return self._core.analyze()[0]

    def vocab(self) -> list[tuple[str, float]]:
        """The model as trained so far, in id order: the special tokens (score 0), then the
        pieces by score."""
        return [(t, 0.0) for t in self.special_tokens] + final_order(self.pieces())

    # -- training -------------------------------------------------------------------------

    def step(self) -> UnigramRound | None:
        """Run exactly one round and return its record (``None`` when training is over)."""
        if self.finished:
            return None
        core = self._core
        size_before = core.size
        if size_before <= self.desired and self.rounds_done:
            return self._final(size_before)
        core.mark()
        likelihoods = []
        dropped = 0
        for _ in range(SUB_ITERATIONS):
            loglik, parts = self._e_step()
            likelihoods.append(loglik)
            dropped += core.m_step(parts, EXPECTED_THRESHOLD)
        changed = [ScoreChange(*c) for c in core.changes(CHANGES)]
        tokens, freq, losses, kinds = self._analysis()
        keep = pruned(kinds, losses, shrunk_size(core.size, self.desired))
        removed = self._removed(keep, kinds, losses, freq, final=False)
        core.keep(array("i", keep))
        event = UnigramRound(
            self.rounds_done + 1, likelihoods[-1], tuple(likelihoods), size_before, core.size, tokens, dropped, removed, changed
        )
        return self._record(event)

    def _final(self, size_before: int) -> UnigramRound:
        """The last round: the pieces their own best segmentation splits go, and the best
        scores fill the vocabulary."""
        core = self._core
        tokens, freq, losses, kinds = self._analysis()
        scores = memoryview(core.scores()).cast("d").tolist()
        keep = finalized(kinds, scores, self.vocab_size - len(self.special_tokens))
        removed = self._removed(keep, kinds, losses, freq, final=True)
        core.keep(array("i", keep))
        loglik, _ = self._e_step()
        self.finished = True
        event = UnigramRound(self.rounds_done + 1, loglik, (loglik,), size_before, core.size, tokens, 0, removed, final=True)
        return self._record(event)

    def _e_step(self) -> tuple[float, list[bytes]]:
        """The E-step over every word: the log-likelihood and each part's expected counts."""
        n = self._core.words
        parts = max(1, min(PARTS, n // PART_WORDS))
        cuts = [n * k // parts for k in range(parts + 1)]
        if parts == 1 or self.threads == 1:
            done = list(map(self._core.e_step, cuts[:-1], cuts[1:]))
        else:
            with ThreadPoolExecutor(min(parts, self.threads)) as pool:
                done = list(pool.map(self._core.e_step, cuts[:-1], cuts[1:]))
        loglik = 0.0
        for part, _ in done:
            loglik += part
        return loglik, [expected for _, expected in done]

    def _analysis(self) -> tuple[int, array[int], array[float], bytes]:
        """The core's analysis as compact arrays: a round's pieces can be a hundred thousand."""
        tokens, freq, losses, kinds = self._core.analyze()
        return tokens, array("q", freq), array("d", losses), kinds

    def _removed(self, keep: list[int], kinds: bytes, losses: array[float], freq: array[int], final: bool) -> list[RemovedPiece]:
        """The pieces not in ``keep``, with why they went: split by their own best
        segmentation, or (pruning) unused or ranked too low by loss, or (the final step)
        ranked too low by score."""
        kept = set(keep)
        gone = [i for i in range(len(kinds)) if i not in kept]
        names = self._core.pieces(array("i", gone))
        out = []
        for i, piece in zip(gone, names, strict=True):
            reason = KIND_NAMES[kinds[i]] if kinds[i] == SPLIT or not final else "final"
            out.append(RemovedPiece(piece, reason, losses[i], freq[i]))
        return out

    def _record(self, event: UnigramRound) -> UnigramRound:
        self.rounds_done += 1
        self.history.append((event.log_likelihood, event.size_after))
        if self.progress is not None:
            self.progress("round", self.rounds_done, None)
        return event

    def run(self, until: int | None = None) -> None:
        """Run rounds until ``until`` are done (default: to the end), or a stop request."""
        while not self.finished and (until is None or self.rounds_done < until) and not self.stop_requested:
            self.step()

    def goto(self, k: int) -> None:
        """Move to the state after ``k`` rounds (back: seed again and replay; rounds are
        deterministic)."""
        if k < self.rounds_done:
            self._build()
        self.run(until=k)
