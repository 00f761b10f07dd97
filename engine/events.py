"""What one merge step did: the trainer's own data, returned by ``Trainer.step()``.

A step pops the heap until its top is current (``stale`` entries are skipped, lazy
deletion), merges every occurrence of the winning pair, and applies the resulting pair-count
deltas (``changes``), pushing each new pair onto the heap (``pushes``). These lists are what
the algorithm computes anyway; a plain ``Trainer.run()`` builds none of them. The small
records are named tuples: a detailed step creates many, and tuples are cheap to build.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

Pair = tuple[int, int]


class PairChange(NamedTuple):
    """A pair whose count changed in this step.

    ``side`` says how the pair touches the merge: ``"prev"`` pairs hold the token before
    the merged pair (the seed's prev_token), ``"next"`` pairs the token after it (next_token).
    """

    pair: Pair
    before: int
    after: int
    side: str


class StalePop(NamedTuple):
    """A heap entry popped whose count was out of date; re-pushed with ``actual`` if above 0."""

    pair: Pair
    heap_count: int
    actual: int


@dataclass(slots=True)
class MergeStep:
    """The record of merge number ``index`` (1-based)."""

    index: int
    pair: Pair
    new_id: int
    token: bytes
    count: int
    ties: list[Pair] = field(default_factory=list)
    """Other pairs with the same count (the first ``TIE_LIMIT``), in tie-break order: they
    lost to the lexicographically greater pair of byte strings."""
    changes: list[PairChange] = field(default_factory=list)
    pushes: list[tuple[Pair, int]] = field(default_factory=list)
    stale: list[StalePop] = field(default_factory=list)
    parked: int = 0
    """New pairs parked in count buckets instead of pushed: they cannot win the next step."""
    heap_size: int = 0
    pair_count: int = 0
    """Number of distinct live pairs (the size of pair_counter) after the step."""
