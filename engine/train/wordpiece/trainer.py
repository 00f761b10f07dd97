"""The optimized WordPiece trainer: BPE's data structures, with symbol counts and a score heap.

Every distinct word is laid out once as token positions linked by ``prev``/``next`` (as in
seed 000), with ``pair_positions`` (append-only, checked when used), the ``pair_counter``
and, for the score's denominators, the count of every symbol (``symbol_count``) and the
live pairs each symbol is part of.

A merge of ``a b`` visits only the positions of that pair. It changes the counts of the
pairs around each occurrence, as in BPE, and also ``count(a)``, ``count(b)`` and
``count(ab)``: so the score of every pair holding ``a``, ``b`` or the new token moves,
most of them up. Each live pair holding one of them gets a fresh heap entry with the counts
it was scored with (a push); an entry whose counts are no longer the pair's is dropped when
it surfaces (a stale pop). Once the heap holds over three times the live pairs (and 4,096
more), it is built afresh from them, one entry each.

Scores are compared exactly: ``count(a b) * count(c) * count(d)`` against
``count(c d) * count(a) * count(b)`` in 192-bit integers, when the scores as doubles are too
close to tell apart. Ties then go by the larger ``count(a b)``, then the greater ``(a, b)``
by UTF-8 bytes, as ``rule`` says.

This state and the merge loop live in the compiled ``engine.train.wordpiece._wordpiece_core``
(each merge re-scores hundreds of pairs: too hot for the interpreter), which holds each
token's UTF-8 bytes for the tie-break. ``WordPieceTrainer`` keeps the token strings and the
merge list, and turns the core's records into events; ``reference`` is the plain version
to read first.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Mapping, Sequence
from itertools import accumulate

from engine.corpus.counting import Progress
from engine.corpus.words import count_file_words, count_words
from engine.corpus.words import lowercase as lowercase_text
from engine.encode.token_ids import as_id
from engine.train.events import Pair, Token
from engine.train.trainer import RUN_SLICE, TIE_LIMIT, Word
from engine.train.wordpiece._wordpiece_core import Core, first_words
from engine.train.wordpiece.events import SymbolChange, WordPieceStep
from engine.train.wordpiece.rule import SPECIAL_TOKENS, base_vocab, joined

TOKEN_LIMIT = 2**31 - 1
"""The most tokens the core numbers (in 32 bits)."""


class WordPieceTrainer:
    """WordPiece training, one merge at a time. Ids index ``vocab``: the special tokens, the
    alphabet, then each new token in the order merges made it."""

    size_unit = "chars"
    """What ``corpus_size`` counts: the characters of the words (whitespace is not kept)."""
    tie_break = "higher score, then larger count(ab), then greater bytes"
    summary = None
    """What was read, as byte-level training reports it: WordPiece reads its file itself."""
    _core: Core
    """The compiled state, laid out by ``_build``."""

    def __init__(
        self,
        word_counts: Mapping[str, int],
        vocab_size: int,
        special_tokens: Sequence[str] = SPECIAL_TOKENS,
        lowercase: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self._word_counts = dict(word_counts)
        self.vocab_size = vocab_size
        self.special_tokens = tuple(special_tokens)
        self.lowercase = lowercase
        """Whether the words were lowercased when counted, kept for the saved model."""
        self.progress = progress
        self.stop_requested = False
        """Set (from a signal handler or another thread) to end ``run()`` at a merge boundary."""
        self._ranked: list[tuple[int, int, str]] | None = None
        self._build()

    @classmethod
    def from_text(
        cls, text: str, vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS, lowercase: bool = False
    ) -> WordPieceTrainer:
        counts = count_words([text], "bert", lowercase_text if lowercase else None)
        return cls(counts, vocab_size, special_tokens, lowercase)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        vocab_size: int,
        special_tokens: Sequence[str] = SPECIAL_TOKENS,
        lowercase: bool = False,
        progress: Progress | None = None,
        errors: str = "strict",
    ) -> WordPieceTrainer:
        counts = count_file_words(path, "bert", progress, errors, normalize=lowercase_text if lowercase else None)
        return cls(counts, vocab_size, special_tokens, lowercase, progress)

    # -- the state before any merge -------------------------------------------------------

    def _build(self) -> None:
        """Lay out the words in the core and queue their pairs: the state before any merge.
        The alphabet is read from the words in which the core first sees each symbol."""
        words = list(self._word_counts)
        text = "".join(words).encode()
        ends = array("q", accumulate(map(len, words)))
        self.vocab = base_vocab([words[i] for i in first_words(text, ends)], self.special_tokens, self.vocab_size)
        self.base_size = len(self.vocab)
        """Special tokens and alphabet: the ids no merge made."""
        counts = array("q", self._word_counts.values())
        # The core numbers tokens in 32 bits: a larger size is never reached, merging stops
        # when no pair is left, as it does for BPE and Unigram.
        reachable = min(self.vocab_size, TOKEN_LIMIT)
        self._core = Core(text, ends, counts, [s.encode() for s in self.vocab], reachable)
        self.merge_pairs: list[Pair] = []
        self.merge_ids: list[int] = []
        """The id each merge made (an existing one when its token was already there)."""
        self.merge_counts: list[int] = []
        self.stopped_early = False
        self.corpus_size = self._core.corpus_chars

    # -- state the app reads --------------------------------------------------------------

    @property
    def merges(self) -> list[tuple[str, str]]:
        v = self.vocab
        return [(v[a], v[b]) for a, b in self.merge_pairs]

    @property
    def merges_done(self) -> int:
        return len(self.merge_pairs)

    @property
    def merges_planned(self) -> int:
        """The merges done and the fewest still needed to fill the vocabulary (a merge that
        makes a token already there adds none, and one more is then needed)."""
        return self.merges_done if self.finished else self.merges_done + self.vocab_size - len(self.vocab)

    @property
    def finished(self) -> bool:
        return self.stopped_early or len(self.vocab) >= self.vocab_size

    def token(self, token_id: int) -> str:
        """The token of ``token_id`` in the vocabulary as it is now; ``TokenIdError`` names an
        id that is none."""
        return self.vocab[as_id(token_id, len(self.vocab) - 1)]

    def symbol_count(self, token_id: int) -> int:
        """``count(token)`` in the corpus as segmented now."""
        return self._core.symbol_count(token_id)

    @property
    def tokens_in_corpus(self) -> int:
        """The tokens of the corpus as segmented now (each word times its count)."""
        return self._core.tokens_in_corpus

    @property
    def stored_positions(self) -> int:
        """Positions held in the ``pair_positions`` lists of live pairs (some merged away)."""
        return self._core.stored_positions

    @property
    def pair_counter(self) -> dict[Pair, int]:
        """A copy of every live pair's count."""
        return self._core.pair_counter()

    @property
    def pair_count(self) -> int:
        return self._core.live_pairs

    @property
    def heap_size(self) -> int:
        """Entries on the heap, stale ones included."""
        return self._core.heap_size

    def top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` pairs that would win next, in the rule's order, with ``count(a b)``: the
        first current entries in the heap's order, read without popping (a pure query)."""
        return self._core.top_pairs(k)

    def bpe_choice(self) -> tuple[Pair, int] | None:
        """The pair BPE's rule would merge now: the most frequent, greater bytes on a tie."""
        return self._core.bpe_choice()

    def words(self, k: int) -> list[Word]:
        """The ``k`` most frequent words (first seen first on a draw), segmented now."""
        if self._ranked is None:  # sorted once, when first shown: a plain run never needs it
            self._ranked = sorted((-c, i, w) for i, (w, c) in enumerate(self._word_counts.items()))
        out = []
        for c, i, text in self._ranked[:k]:
            parts: list[Token] = [self.vocab[t] for t in self._core.segmentation(i)]
            out.append(Word(text, -c, parts))
        return out

    # -- training -------------------------------------------------------------------------

    def step(self) -> WordPieceStep | None:
        """Perform exactly one merge and return its full record (``None`` when done)."""
        if self.finished:
            return None
        done = self._core.step(TIE_LIMIT)
        if done is None:
            self.stopped_early = True
            return None
        a, b, new, count, left, right, ties, changes, pushes, stale, heap_size, pair_count, symbols, bpe = done
        self._record([a, b, new, count])
        bpe_pair, bpe_count, bpe_left, bpe_right = bpe if bpe is not None else (None, 0, 0, 0)
        return WordPieceStep(
            self.merges_done,
            (a, b),
            new,
            self.vocab[new],
            count,
            ties,
            changes,
            pushes,
            stale,
            heap_size,
            pair_count,
            left_count=left,
            right_count=right,
            symbol_changes=[SymbolChange(*s) for s in symbols],
            bpe_pair=bpe_pair,
            bpe_count=bpe_count,
            bpe_left_count=bpe_left,
            bpe_right_count=bpe_right,
        )

    def run(self, until: int | None = None) -> None:
        """Merge until ``until`` merges are done (default: until the vocabulary is full), or
        a stop request (looked at every ``RUN_SLICE`` merges)."""
        report = self.progress
        while not self.finished and (until is None or self.merges_done < until) and not self.stop_requested:
            want = RUN_SLICE if until is None else min(RUN_SLICE, until - self.merges_done)
            done = memoryview(self._core.run(want)).cast("q").tolist()
            self._record(done)
            if len(done) < 4 * want and not self.finished:  # no pair left
                self.stopped_early = True
            if report is not None:
                report("merge", self.merges_done, self.merges_planned)
        if report is not None:
            report("merge", self.merges_done, self.merges_planned)

    def _record(self, rows: list[int]) -> None:
        """Note merges the core has done, as rows ``(a, b, new, count)``, and the strings of
        the tokens they added (the core has their bytes)."""
        lefts, rights, news = rows[0::4], rows[1::4], rows[2::4]
        vocab = self.vocab
        for a, b, new in zip(lefts, rights, news, strict=True):
            if new == len(vocab):  # else a token made before by another route: the same symbol
                vocab.append(joined(vocab[a], vocab[b]))
        self.merge_pairs += zip(lefts, rights, strict=True)
        self.merge_ids += news
        self.merge_counts += rows[3::4]

    def goto(self, k: int) -> None:
        """Move to the state after ``k`` merges (back: rebuild and merge again, which picks
        the same pairs and leaves the heap as it was: training is deterministic)."""
        if k < self.merges_done:
            self._build()
        self.run(until=k)

    # -- the trained model ----------------------------------------------------------------

    def state(self) -> tuple[list[str], tuple[str, ...], bool]:
        """What a model needs: the vocabulary in id order, the special tokens, lowercasing."""
        return list(self.vocab), self.special_tokens, self.lowercase
