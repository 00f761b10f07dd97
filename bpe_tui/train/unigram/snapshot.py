"""What Unigram's training screen shows, taken from the trainer between rounds.

The trainer lives in another process (``unigram.process``); after each round it sends a
``UnigramSnapshot`` and the panels read only that. A round's record (``UnigramRound``) can
remove a hundred thousand pieces: the snapshot keeps their number by reason and the
``SHOWN`` that cost the most to remove, so what crosses the pipe stays small.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from engine.encode.unigram import UnigramTokenizer
from engine.train.unigram.events import RemovedPiece, ScoreChange, UnigramRound
from engine.train.unigram.rule import SPACE
from engine.train.unigram.trainer import UnigramTrainer

SHOWN = 40
"""Removed pieces a round keeps for the screen: those whose removal cost the most."""
NBEST = 20
"""Segmentations of the chosen word: the best and its runners-up (the panel shows those that fit)."""
WORD_LENGTHS = range(8, 14)
"""The default word has these many characters (``▁`` included)."""
OPENING = 2000
"""Characters of the corpus's opening the default word is taken from."""


@dataclass(frozen=True, slots=True)
class RoundView:
    """One round as the panels show it: ``UnigramRound``'s numbers, its removed pieces
    counted by reason, and the ``SHOWN`` of them whose removal cost the most."""

    number: int
    log_likelihood: float
    likelihoods: tuple[float, ...]
    """Each E-step's corpus log-likelihood, in order: EM raises it."""
    size_before: int
    size_after: int
    tokens: int
    """The corpus's tokens on the best paths, before the round removed pieces."""
    dropped: int
    """Pieces the M-steps dropped (expected fewer than 0.5 times)."""
    removed: int
    """Pieces removed after EM: pruning, or the final step."""
    reasons: dict[str, int]
    """How many went for each reason (``pruned``, ``unused``, ``split``, ``final``)."""
    costliest: tuple[RemovedPiece, ...]
    """The removed pieces whose loss was largest, largest first."""
    changed: tuple[ScoreChange, ...]
    """The pieces whose log-probability EM moved most, largest move first."""
    final: bool

    @classmethod
    def of(cls, event: UnigramRound) -> RoundView:
        reasons = Counter(piece.reason for piece in event.removed)
        costliest = sorted(event.removed, key=lambda p: (-p.loss, -p.uses, p.piece))[:SHOWN]
        return cls(
            event.number,
            event.log_likelihood,
            event.likelihoods,
            event.size_before,
            event.size_after,
            event.tokens,
            event.dropped,
            len(event.removed),
            dict(reasons),
            tuple(costliest),
            tuple(event.changed),
            event.final,
        )


@dataclass(frozen=True, slots=True)
class Segmentations:
    """A word's most probable segmentations on the model as it is, best first."""

    word: str
    """As Unigram sees it: ``▁`` where the space before it was."""
    best: tuple[tuple[tuple[str, ...], float], ...]
    """``(pieces, log-probability)``: the best path, then its runners-up."""


@dataclass(frozen=True, slots=True)
class UnigramSnapshot:
    """The trainer after ``rounds_done`` rounds."""

    rounds_done: int
    finished: bool
    size: int
    """Pieces now (every character among them; special tokens not)."""
    vocab_size: int
    """The vocabulary asked for, special tokens included."""
    specials: int
    """Special tokens (``<unk>``...): the pieces training ends with are ``vocab_size`` less these."""
    desired: int
    """Pruning stops once a round leaves at most this many; the final step follows."""
    seeded: int
    """Pieces at round 0: the characters and the seeded substrings."""
    characters: int
    """The corpus's distinct characters: always kept."""
    words: int
    """Distinct words."""
    corpus_chars: int
    """Characters of the corpus's words, ``▁`` included."""
    rounds: tuple[RoundView, ...]
    """Rounds 1 to ``rounds_done``."""
    word: Segmentations | None

    @property
    def last(self) -> RoundView | None:
        return self.rounds[-1] if self.rounds else None

    @property
    def history(self) -> list[tuple[float, int]]:
        """Each round's log-likelihood and the vocabulary it left: the trainer's ``history``."""
        return [(r.log_likelihood, r.size_after) for r in self.rounds]


def default_word(trainer: UnigramTrainer, opening: str | None) -> str:
    """A word to follow until one is chosen: the longest word of letters of ``WORD_LENGTHS``
    characters (with its ``▁``) in the corpus's ``opening``, the first of them on a tie: a
    real word, long enough to be cut into pieces (on corpus.en, ▁construction becomes
    ▁con|struc|tion). Without one, among the seeds that are such
    words of letters, ranked by first score (frequency × length), the one a third of the way
    down (a seed can be a word's start only); else the best-scored piece of three letters or
    more (Chinese has no spaces: its words are whole clauses), else the best piece."""
    opened = [w for w in UnigramTokenizer.words(" ".join((opening or "").split())) if len(w) in WORD_LENGTHS and w[1:].isalpha()]
    if opened:
        return max(opened, key=len)
    pieces = [piece for piece, _ in sorted(trainer.pieces(), key=lambda p: (-p[1], p[0]))]
    words = [p for p in pieces if p.startswith(SPACE) and len(p) in WORD_LENGTHS and p[1:].isalpha()]
    if words:
        return words[len(words) // 3]
    letters = (p for p in pieces if len(p.lstrip(SPACE)) >= 3 and p.lstrip(SPACE).isalpha())
    return next(letters, pieces[0])


def segmentations(tokenizer: UnigramTokenizer, word: str) -> Segmentations:
    return Segmentations(word, tuple(tokenizer.nbest(word, NBEST)))


def sample(trainer: UnigramTrainer, seeded: int, rounds: list[RoundView], word: Segmentations | None) -> UnigramSnapshot:
    return UnigramSnapshot(
        trainer.rounds_done,
        trainer.finished,
        trainer.size,
        trainer.vocab_size,
        len(trainer.special_tokens),
        trainer.desired,
        seeded,
        len(trainer.characters),
        trainer.words,
        trainer.corpus_size,
        tuple(rounds[: trainer.rounds_done]),
        word,
    )
