"""What WordPiece's rule reads besides pair_counter, sampled with the rest of a snapshot.

WordPiece merges the pair of the highest score ``count(a b) / (count(a) * count(b))`` (the
likelihood gain, 似然), where BPE merges the most frequent pair. So its panels need
``count(a)`` of every symbol they show, and the pair BPE's rule would merge at the same
moment, to set beside it. Sampled in the trainer's process, like everything the screen shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from engine.train.events import MergeStep, Pair
from engine.train.wordpiece.events import WordPieceStep
from engine.train.wordpiece.rule import score
from engine.train.wordpiece.trainer import WordPieceTrainer


@dataclass(frozen=True, slots=True)
class Likelihood:
    """The symbol counts and BPE's choice at one moment of WordPiece training."""

    symbol_counts: dict[int, int]
    """``count(a)`` now of each symbol in the pairs sampled and in BPE's choice."""
    bpe_choice: tuple[Pair, int] | None
    """The pair BPE's rule (the most frequent) would merge now, with its count; None when no pair is left."""
    base_size: int
    """Special tokens and alphabet: the ids no merge made."""
    reused: bool = False
    """The last merge made a token already in the vocabulary (by another pair): no new id."""

    def count(self, symbol: int) -> int:
        return self.symbol_counts[symbol]

    def score(self, pair: Pair, count: int) -> Fraction:
        """``count(a b) / (count(a) * count(b))`` of a pair sampled, exactly."""
        return score(count, self.symbol_counts[pair[0]], self.symbol_counts[pair[1]])


def sample_likelihood(trainer: WordPieceTrainer, top: Sequence[tuple[Pair, int]], last: MergeStep | None) -> tuple[Likelihood, set[int]]:
    """The likelihood side of a sample, and every id it and the last step mention (to be named)."""
    bpe = trainer.bpe_choice()
    symbols = {i for pair, _ in top for i in pair}
    if bpe is not None:
        symbols.update(bpe[0])
    mentioned = set(symbols)
    reused = False
    if isinstance(last, WordPieceStep):
        mentioned.update(change.symbol for change in last.symbol_changes)
        mentioned.update(last.bpe_pair or ())
        made = trainer.merge_ids
        reused = last.new_id < trainer.base_size or last.new_id in made[: last.index - 1]
    counts = {i: trainer.symbol_count(i) for i in symbols}
    return Likelihood(counts, bpe, trainer.base_size, reused), mentioned
