"""Where a pair lives in the corpus: the trainer's laid-out words and its pair_positions.

Every distinct pre-token ("word") is laid out once, each token at a position with
``prev``/``next`` links; merging joins two cells into the left one and relinks around
the right one, which is gone from the word. ``pair_positions`` records, for each pair, the
positions where it started when it was counted, and is never pruned: a recorded position
is *live* while the pair still starts there, and *stale* once a merge has changed either
token (the merge skips it). These read-only views are what ``Trainer.pair_occurrences``
and ``Trainer.word_cells`` return.
"""

from __future__ import annotations

from dataclasses import dataclass

Pair = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Cell:
    """One token of a laid-out word: its position, its token id and its links.

    ``prev``/``next`` are the positions of the neighbouring tokens, ``None`` at the word's
    ends (the lecture's ``None``).
    """

    position: int
    token: int
    prev: int | None
    next: int | None


@dataclass(frozen=True, slots=True)
class WordCells:
    """A word (``index`` in the trainer's layout), its corpus count and its cells now."""

    index: int
    text: bytes
    count: int
    cells: tuple[Cell, ...]

    def cell_at(self, position: int) -> Cell | None:
        """The cell at ``position``, or ``None`` if no token starts there now."""
        for cell in self.cells:
            if cell.position == position:
                return cell
        return None


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A position recorded in ``pair_positions`` and whether the pair still starts there."""

    position: int
    word: int
    live: bool


@dataclass(frozen=True, slots=True)
class PairOccurrences:
    """A pair's ``pair_positions`` list as the trainer holds it.

    ``recorded`` positions in all, ``live`` of them where the pair starts now; the first
    few ``occurrences`` in list order, and the ``words`` they lie in, by index.
    """

    pair: Pair
    recorded: int
    live: int
    occurrences: tuple[Occurrence, ...]
    words: dict[int, WordCells]

    @property
    def stale(self) -> int:
        return self.recorded - self.live
