"""What one merge step did: the trainer's own data, returned by ``Trainer.step()``.

A step pops the heap until its top is current (``stale`` entries are skipped, lazy
deletion), merges every occurrence of the winning pair, and applies the resulting pair-count
deltas (``changes``), pushing each new pair onto the heap (``pushes``). These are what the
algorithm computes anyway; a plain ``Trainer.run()`` records none of them.

A step can change thousands of pair counts, so the trainer core hands them over packed, as
rows of int64 (``packed_*``), and a record object is made only for a row that is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar, overload

Pair = tuple[int, int]
Token = bytes | str
"""A token as the trainer knows it: bytes (byte-level ``Trainer``) or a string (``ClassicTrainer``)."""
R = TypeVar("R")


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


class Rows(Sequence[R], Generic[R]):
    """A read-only sequence of records stored as packed int64 rows of ``width`` values."""

    __slots__ = ("_data", "_width", "_record")

    def __init__(self, data: bytes, width: int, record: Callable[[tuple[int, ...]], R]) -> None:
        self._data = data
        self._width = width
        self._record = record

    def __len__(self) -> int:
        return len(self._data) // (8 * self._width)

    @overload
    def __getitem__(self, i: int) -> R: ...
    @overload
    def __getitem__(self, i: slice) -> list[R]: ...
    def __getitem__(self, i: int | slice) -> R | list[R]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("row index out of range")
        w = self._width
        start = (i % n) * w
        return self._record(tuple(memoryview(self._data).cast("q")[start : start + w]))

    def __iter__(self) -> Iterator[R]:
        values = memoryview(self._data).cast("q").tolist()
        w, record = self._width, self._record
        return (record(tuple(values[k : k + w])) for k in range(0, len(values), w))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rows):
            return self._data == other._data and self._width == other._width
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"Rows({list(self)!r})"


def _change(r: tuple[int, ...]) -> PairChange:
    return PairChange((r[0], r[1]), r[2], r[3], "next" if r[4] else "prev")


def _push(r: tuple[int, ...]) -> tuple[Pair, int]:
    return (r[0], r[1]), r[2]


def _stale(r: tuple[int, ...]) -> StalePop:
    return StalePop((r[0], r[1]), r[2], r[3])


@dataclass(slots=True)
class MergeStep:
    """The record of merge number ``index`` (1-based)."""

    index: int
    pair: Pair
    new_id: int
    token: Token
    count: int
    ties: list[Pair] = field(default_factory=list)
    """Other pairs with the same count (the first ``TIE_LIMIT``), in tie-break order: they
    lost to the lexicographically greater pair of byte strings (``Trainer``) or to the pair
    seen first (``ClassicTrainer``)."""
    packed_changes: bytes = b""
    packed_pushes: bytes = b""
    packed_stale: bytes = b""
    heap_size: int = 0
    pair_count: int = 0
    """Number of distinct live pairs (the size of pair_counter) after the step."""

    @property
    def changes(self) -> Rows[PairChange]:
        """Every pair whose count changed, once each. Its ``side`` is where the pair's other
        token sat when the step first changed it: before the merged pair or after it."""
        return Rows(self.packed_changes, 5, _change)

    @property
    def pushes(self) -> Rows[tuple[Pair, int]]:
        """Heap pushes ``((left, right), count)``: new pairs, and stale entries re-pushed."""
        return Rows(self.packed_pushes, 3, _push)

    @property
    def stale(self) -> Rows[StalePop]:
        """Stale heap entries popped before the winner was found."""
        return Rows(self.packed_stale, 4, _stale)
