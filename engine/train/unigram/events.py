"""What one round of Unigram training did: EM's likelihood and the pieces pruning removed.

A round is ``SUB_ITERATIONS`` EM iterations and a pruning; the last round instead keeps the
vocabulary size's best scores. The record holds the algorithm's own numbers: each E-step's
corpus log-likelihood, the Viterbi tokens of the corpus, how many pieces the M-steps dropped
(the first round's are most of the seeds: only their number is kept), every piece pruning
removed with why and what it would have cost, and the pieces whose log-probability moved
most.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class RemovedPiece(NamedTuple):
    """A piece a round removed."""

    piece: str
    reason: str
    """``split``: its own best segmentation is into other pieces, so no best path uses it;
    ``unused``: no best path uses it; ``pruned``: its loss ranked below the pieces kept;
    ``final``: its score ranked below the vocabulary size in the final step."""
    loss: float
    """What removing it costs the corpus log-likelihood per token (0 where it is never used)."""
    uses: int
    """Its count on the corpus's best paths."""


class ScoreChange(NamedTuple):
    """A piece's log-probability before and after the round's EM."""

    piece: str
    before: float
    after: float


@dataclass(slots=True)
class UnigramRound:
    """The record of round ``number`` (from 1)."""

    number: int
    log_likelihood: float
    """The corpus log-likelihood at the round's last E-step (each word's times its count)."""
    likelihoods: tuple[float, ...]
    """Each E-step's, in order (the final round has one: the kept pieces' likelihood)."""
    size_before: int
    size_after: int
    tokens: int
    """The corpus's tokens on the best paths, before the pieces were removed."""
    dropped: int
    """Pieces the M-steps dropped, expected fewer than 0.5 times (they are not listed)."""
    removed: list[RemovedPiece] = field(default_factory=list)
    changed: list[ScoreChange] = field(default_factory=list)
    """The pieces whose log-probability EM moved most, largest move first."""
    final: bool = False
