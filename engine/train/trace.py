"""A run's merges with what each one did, for a handout: the trainer's own events, by name.

Each merge's record is its ``MergeStep`` with the ids turned into tokens: the pair, its
count, the pairs it won a tie against, and every pair count it changed (before→after, and
whether the pair held the token before the merged pair or after it). A plain run records
no events, so the merges done so far are redone from the start as recorded steps; the
trainer ends where it was (the same merges: a run is deterministic).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple, Protocol

from engine.train.events import MergeStep, Token


class RecordingTrainer(Protocol):
    """What a trace needs of a trainer (byte-level or classic)."""

    stopped_early: bool

    @property
    def merges_done(self) -> int: ...
    def token(self, token_id: int) -> Token: ...
    def goto(self, k: int) -> None: ...
    def step(self) -> MergeStep | None: ...


class CountChange(NamedTuple):
    """A pair whose count a merge changed; ``side``: "prev" if it holds the token before
    the merged pair, "next" the token after it."""

    left: Token
    right: Token
    before: int
    after: int
    side: str


@dataclass(frozen=True, slots=True)
class MergeRecord:
    """Merge number ``merge`` (1-based): ``left`` + ``right`` became id ``new_id``."""

    merge: int
    new_id: int
    left: Token
    right: Token
    token: Token
    count: int
    ties: tuple[tuple[Token, Token], ...]
    """The pairs with the same count it beat (the first few), in tie-break order."""
    changes: tuple[CountChange, ...]


def merge_record(step: MergeStep, token: Callable[[int], Token]) -> MergeRecord:
    """``step`` with its ids named by ``token`` (call while they are in the vocabulary)."""
    left, right = token(step.pair[0]), token(step.pair[1])
    ties = tuple((token(a), token(b)) for a, b in step.ties)
    changes = tuple(CountChange(token(c.pair[0]), token(c.pair[1]), c.before, c.after, c.side) for c in step.changes)
    return MergeRecord(step.index, step.new_id, left, right, step.token, step.count, ties, changes)


def replay_records(trainer: RecordingTrainer) -> list[MergeRecord]:
    """The records of the merges done so far, redone from the start as recorded steps."""
    done, stopped = trainer.merges_done, trainer.stopped_early
    trainer.goto(0)
    token = cache(trainer.token)  # ids keep their token: name each once
    records = []
    while trainer.merges_done < done and (step := trainer.step()) is not None:
        records.append(merge_record(step, token))
    trainer.stopped_early = stopped  # it had found no pair left after these merges
    return records
