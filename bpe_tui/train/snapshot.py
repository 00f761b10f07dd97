"""What the training screen shows, sampled from the trainer between merges.

The trainer's state changes under a running merge, and it lives in another process. So the
process that runs the merges (``train.process``) takes these samples between merges and
sends them; the widgets read only them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bpe_tui.train.likelihood import Likelihood, sample_likelihood
from engine import MergeStep, PairOccurrences, Trainer, Word, WordCells
from engine.corpus.characters import CharacterCounts, PartialChars
from engine.corpus.counting import CountSummary, Progress
from engine.train.events import Token
from engine.train.follow import FollowedWord, Follower
from engine.train.wordpiece.trainer import WordPieceTrainer

Pair = tuple[int, int]


class SteppableTrainer(Protocol):
    """What the screen and its process use of a trainer: byte-level ``engine.Trainer``,
    ``engine.train.classic.ClassicTrainer`` and ``WordPieceTrainer`` each are one."""

    size_unit: str
    """What ``corpus_size`` counts: "bytes", or "chars" of the words."""
    tie_break: str
    """How ties go, in a few words ("greater bytes win", "first seen wins", WordPiece's rule)."""
    stopped_early: bool
    stop_requested: bool
    progress: Progress | None

    @property
    def tokens_in_corpus(self) -> int: ...
    @property
    def merge_counts(self) -> Sequence[int]: ...
    @property
    def summary(self) -> CountSummary | None: ...  # what counting read (classic BPE keeps none)
    @property
    def corpus_size(self) -> int: ...
    @property
    def merges_done(self) -> int: ...
    @property
    def merges_planned(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    @property
    def merge_ids(self) -> Sequence[int]: ...
    @property
    def heap_size(self) -> int: ...
    @property
    def pair_count(self) -> int: ...
    @property
    def stored_positions(self) -> int: ...
    def token(self, token_id: int) -> Token: ...
    def top_pairs(self, k: int) -> list[tuple[Pair, int]]: ...
    def words(self, k: int) -> list[Word]: ...
    def step(self) -> MergeStep | None: ...
    def run(self, until: int | None = None) -> None: ...
    def goto(self, k: int) -> None: ...


ROWS = 40
"""Rows sampled for each list: more than the tallest panel shows."""
OCCURRENCES = 12
"""Recorded positions of a pair sampled for the pair-in-the-corpus panel."""


@dataclass(frozen=True, slots=True)
class MergeInCorpus:
    """A merge seen in the corpus words: its pair's pair_positions just before it, and the
    words they lie in just after (merged cells, links rewired)."""

    before: PairOccurrences
    after: dict[int, WordCells]


@dataclass(frozen=True, slots=True)
class TrainSnapshot:
    """The trainer's state after ``merges_done`` merges, and the record of the last one."""

    merges_done: int
    merges_planned: int
    finished: bool
    stopped_early: bool
    last: MergeStep | None
    """The merge that led here (None at merge 0)."""
    top_pairs: list[tuple[Pair, int]]
    """The pairs that would win next, in the trainer's order, with their counts (WordPiece's:
    by score)."""
    words: list[Word]
    merge_counts: list[int]
    """The winning count of every merge so far."""
    newest: list[tuple[int, Token, int]]
    """The newest tokens, newest first: (id, token, count at merge)."""
    heap_size: int
    pair_counter_size: int
    stored_positions: int
    """Positions held in the pair_positions lists of live pairs."""
    corpus_size: int
    size_unit: str
    """What ``corpus_size`` counts: "bytes", or "chars" (classic BPE's words)."""
    tokens_in_corpus: int
    tie_break: str
    names: dict[int, Token]
    """The token (bytes, or a classic string) of every id the fields above mention."""
    upcoming: PairOccurrences | None = None
    """Where the pair about to merge lies now (sampled only while its panel is shown)."""
    merged: MergeInCorpus | None = None
    """The last merge in the corpus words (likewise)."""
    characters: dict[bytes, PartialChars] | None = None
    """The characters of the corpus that each token shown on its own (and each top pair and
    stale pop, joined) holds part of, for every one that holds part of one; None until the
    corpus's characters are counted, just after the first snapshot."""
    followed: list[FollowedWord] = field(default_factory=list)
    """The words the user follows, where the merges so far have brought them."""
    likelihood: Likelihood | None = None
    """WordPiece only: the symbol counts its scores divide by, and BPE's choice now."""

    def token(self, token_id: int) -> Token:
        return self.names[token_id]

    def pair(self, pair: Pair) -> list[Token]:
        return [self.names[pair[0]], self.names[pair[1]]]

    def chars(self, token: Token) -> PartialChars | None:
        """The characters ``token`` holds part of (None: whole characters only)."""
        return self.characters.get(token) if isinstance(token, bytes) and self.characters is not None else None

    def pair_chars(self, pair: Pair) -> PartialChars | None:
        """The characters the pair, joined, holds part of."""
        left, right = self.pair(pair)
        return self.chars(left + right) if isinstance(left, bytes) and isinstance(right, bytes) else None

    @property
    def ran_out_unrecorded(self) -> bool:
        """No pair was left after some merges, found by a run that kept no record of the last."""
        return self.last is None and self.stopped_early and self.merges_done > 0

    @property
    def per_token(self) -> float:
        """Compression: ``size_unit`` per token on the whole corpus."""
        return self.corpus_size / max(1, self.tokens_in_corpus)


def watched_step(trainer: Trainer) -> tuple[MergeStep | None, MergeInCorpus | None]:
    """One recorded merge, with its pair's occurrences just before it and their words after."""
    top = trainer.top_pairs(1)
    before = trainer.pair_occurrences(top[0][0], OCCURRENCES) if top and not trainer.finished else None
    step = trainer.step()
    if step is None or before is None:
        return step, None
    return step, MergeInCorpus(before, {i: trainer.word_cells(i) for i in before.words})


@dataclass
class Extras:
    """What the trainer's process adds to a sample beyond the trainer's own state."""

    watching: bool = False
    """The pair-in-the-corpus panel is shown: sample where the next pair lies."""
    characters: CharacterCounts | None = None
    """The corpus's characters, to name the ones a token holds part of."""
    follower: Follower | None = None
    """The words the user follows."""


def sample(
    trainer: SteppableTrainer, last: MergeStep | None, merged: MergeInCorpus | None = None, extras: Extras | None = None
) -> TrainSnapshot:
    """Read what the screen needs; call only from the thread that runs the merges."""
    extras = extras or Extras()
    watching = extras.watching
    done = trainer.merges_done
    if last is not None and last.index != done:
        last = None  # a record of some other state
    if last is None or not watching:
        merged = None
    top = trainer.top_pairs(ROWS)
    counts = list(trainer.merge_counts)
    made = trainer.merge_ids
    newest = [(made[i], trainer.token(made[i]), counts[i]) for i in range(done - 1, max(-1, done - 1 - ROWS), -1)]
    ids = {i for pair, _ in top for i in pair}
    if last is not None:
        ids.update(last.pair)
        ids.update(i for change in last.changes for i in change.pair)
        ids.update(i for pair in last.ties for i in pair)
        ids.update(i for stale in last.stale for i in stale.pair)
    upcoming = (
        trainer.pair_occurrences(top[0][0], OCCURRENCES)
        if watching and top and not trainer.finished and isinstance(trainer, Trainer)
        else None
    )
    shown_words = [*(upcoming.words.values() if upcoming else ()), *(merged.before.words.values() if merged else ())]
    shown_words += merged.after.values() if merged else ()
    ids.update(cell.token for word in shown_words for cell in word.cells)
    likelihood = None
    if isinstance(trainer, WordPieceTrainer):
        likelihood, mentioned = sample_likelihood(trainer, top, last)
        ids.update(mentioned)
    names = {i: trainer.token(i) for i in ids}
    names.update((i, token) for i, token, _ in newest)
    characters: dict[bytes, PartialChars] | None = None
    if extras.characters is not None:
        data = {i: t for i, t in names.items() if isinstance(t, bytes)}
        joined = [*(pair for pair, _ in top), *(stale.pair for stale in (last.stale if last is not None else ()))]
        alone = [*data.values(), *(data[a] + data[b] for a, b in joined if a in data and b in data)]
        characters = {t: c for t in alone if (c := extras.characters.around(t)) is not None}
    followed = extras.follower.state(trainer) if extras.follower is not None and isinstance(trainer, Trainer) else []
    return TrainSnapshot(
        merges_done=done,
        merges_planned=trainer.merges_planned,
        finished=trainer.finished,
        stopped_early=trainer.stopped_early,
        last=last,
        top_pairs=top,
        words=trainer.words(ROWS),
        merge_counts=counts,
        newest=newest,
        heap_size=trainer.heap_size,
        pair_counter_size=trainer.pair_count,
        stored_positions=trainer.stored_positions,
        corpus_size=trainer.corpus_size,
        size_unit=trainer.size_unit,
        tokens_in_corpus=trainer.tokens_in_corpus,
        tie_break=trainer.tie_break,
        names=names,
        upcoming=upcoming,
        merged=merged,
        characters=characters,
        followed=followed,
        likelihood=likelihood,
    )
