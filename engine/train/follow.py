"""Words followed through training: each one's tokens after the merges so far, and the
merges that changed it.

A followed word is cut by the pre-tokenizer the corpus was cut with, and each of its
pre-tokens is merged as the encoder would merge it (lowest merge rank first) with the merges
done so far: for a pre-token of the corpus that is the segmentation the trainer holds, and
a word the corpus never had is segmented all the same. How often each pre-token occurs is
counted once, when the word is followed: as a whole pre-token, and inside longer ones (a
run of Chinese between two punctuation marks is one pre-token, so a name seldom stands alone).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.word_table import WordTable
from engine.train.trainer import MergePairs, Trainer

Pair = tuple[int, int]


@dataclass(frozen=True, slots=True)
class WordChange:
    """Merge number ``merge`` (1-based) joined ``left`` and ``right`` in the word, first at
    byte ``at`` of its pre-token."""

    merge: int
    left: bytes
    right: bytes
    at: int


@dataclass(frozen=True, slots=True)
class FollowedPiece:
    """One pre-token of a followed word."""

    text: bytes
    count: int
    """Times it is a whole pre-token of the corpus."""
    inside: int
    """Times it occurs inside longer pre-tokens."""
    parts: tuple[bytes, ...]
    """Its tokens after the merges so far."""
    changes: tuple[WordChange, ...]
    """The merges that changed it, in merge order."""


@dataclass(frozen=True, slots=True)
class FollowedWord:
    """A word as the pre-tokenizer cuts it, each pre-token where training has brought it."""

    word: str
    pieces: tuple[FollowedPiece, ...]

    @property
    def occurs(self) -> bool:
        """Whether the corpus has it at all, whole or inside longer pre-tokens."""
        return any(p.count or p.inside for p in self.pieces)

    @property
    def changes(self) -> list[tuple[FollowedPiece, WordChange]]:
        """The merges that changed any of its pre-tokens, in merge order, each with that
        pre-token."""
        return sorted(((p, c) for p in self.pieces for c in p.changes), key=lambda found: found[1].merge)


def occurrences(table: WordTable, piece: bytes) -> tuple[int, int]:
    """How often ``piece`` is a whole pre-token of ``table``, and how often it lies inside a
    longer one (one scan of the table's bytes, in C)."""
    whole = inside = 0
    ends = table.ends
    for found in re.finditer(re.escape(piece), table.words):
        i = bisect_right(ends, found.start())
        start = ends[i - 1] if i else 0
        if found.start() == start and found.end() == ends[i]:
            whole += table.counts[i]
        elif found.end() <= ends[i]:  # not across two words laid end to end
            inside += table.counts[i]
    return whole, inside


def segment(piece: bytes, ranks: dict[Pair, int], done: int, merged: int) -> tuple[list[int], list[tuple[int, int]]]:
    """``piece``'s token ids after the first ``done`` merges, lowest rank first (leftmost on a
    tie), and each merge that changed it: its rank, and the byte where it first joined the
    pair. ``ranks``: each merged pair's 0-based rank; merge ``r`` made id ``merged + r``."""
    ids, starts = list(piece), list(range(len(piece)))
    changes: list[tuple[int, int]] = []
    while len(ids) > 1:
        found = [(r, i) for i, pair in enumerate(zip(ids, ids[1:], strict=False)) if (r := ranks.get(pair, done)) < done]
        if not found:
            break
        best, first = min(found)
        changes.append((best, starts[first]))
        i = 0
        while i < len(ids) - 1:  # every occurrence, left to right, as the trainer merges them
            if ranks.get((ids[i], ids[i + 1])) == best:
                ids[i : i + 2] = [merged + best]
                del starts[i + 1]
            i += 1
    return ids, changes


class Follower:
    """The words followed in one training run, and their state at any merge.

    The pairs merged so far are read from the trainer (``merge_pairs``) as it goes; going
    back only means fewer of them apply, since a run redoes the same merges.
    """

    def __init__(self, pattern: str, special_tokens: Sequence[str]) -> None:
        self.pretokenizer = PreTokenizer(pattern, special_tokens)
        self._pieces: dict[str, list[tuple[bytes, int, int]]] = {}
        """Each followed word's pre-tokens, with their counts whole and inside others."""
        self._ranks: dict[Pair, int] = {}
        self._ranked = 0
        """Merges ranked so far."""

    @property
    def words(self) -> list[str]:
        return list(self._pieces)

    def cut(self, word: str) -> list[bytes]:
        """The pre-tokens of ``word`` (special tokens are never merged, so they are left out)."""
        split = self.pretokenizer
        return [p.encode("utf-8") for text, special in split.split_special(word) if not special for p in split.pretokens(text)]

    def follow(self, word: str, table: WordTable) -> None:
        """Follow ``word``, counting its pre-tokens in ``table`` (the trainer's)."""
        self._pieces[word] = [(piece, *occurrences(table, piece)) for piece in self.cut(word)]

    def unfollow(self, word: str) -> None:
        self._pieces.pop(word, None)

    def state(self, trainer: Trainer) -> list[FollowedWord]:
        """Every followed word after the trainer's merges so far."""
        done = trainer.merges_done
        self._learn(trainer.merge_pairs, done)
        merged = trainer.merge_ids.start
        token = trainer.token_bytes
        out = []
        for word, pieces in self._pieces.items():
            shown = []
            for text, whole, inside in pieces:
                ids, ranks = segment(text, self._ranks, done, merged)
                changes = []
                for r, at in ranks:
                    left, right = trainer.merge_pairs[r]
                    changes.append(WordChange(r + 1, token(left), token(right), at))
                shown.append(FollowedPiece(text, whole, inside, tuple(map(token, ids)), tuple(changes)))
            out.append(FollowedWord(word, tuple(shown)))
        return out

    def _learn(self, pairs: MergePairs, done: int) -> None:
        """Rank the pairs merged since last time."""
        for rank in range(self._ranked, done):
            self._ranks[pairs[rank]] = rank
        self._ranked = max(self._ranked, done)
