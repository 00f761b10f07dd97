"""What one WordPiece merge did: BPE's ``MergeStep`` and what likelihood adds to it.

``count`` is ``count(a b)``; the score's other two counts, the symbol counts the merge
changed, and the pair BPE's rule (the most frequent) would have merged at the same moment
are here too, so a screen can say why the two rules differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from engine.train.events import MergeStep, Pair


class SymbolChange(NamedTuple):
    """A symbol whose count the merge changed: its two parts lose, the new token gains."""

    symbol: int
    before: int
    after: int


@dataclass(slots=True)
class WordPieceStep(MergeStep):
    """The record of WordPiece merge number ``index``; ``ties`` are pairs of the same score
    that lost to a larger ``count(a b)`` or to greater bytes."""

    left_count: int = 0
    """``count(a)`` when the pair was chosen."""
    right_count: int = 0
    """``count(b)`` likewise."""
    symbol_changes: list[SymbolChange] = field(default_factory=list)
    bpe_pair: Pair | None = None
    """The pair BPE's rule would have merged instead: the most frequent (greater bytes on a tie)."""
    bpe_count: int = 0
    bpe_left_count: int = 0
    bpe_right_count: int = 0

    @property
    def score(self) -> Fraction:
        """``count(a b) / (count(a) * count(b))``, exactly."""
        return Fraction(self.count, self.left_count * self.right_count)

    @property
    def bpe_score(self) -> Fraction | None:
        """The score of BPE's pair, which lost on likelihood (None when there was none)."""
        if self.bpe_pair is None:
            return None
        return Fraction(self.bpe_count, self.bpe_left_count * self.bpe_right_count)
