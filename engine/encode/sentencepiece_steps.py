"""A SentencePiece ``.model``'s encode step by step, for the encode views: a Unigram model's
lattices and Viterbi path, a BPE model's merge rounds, as sentencepiece's C++ runs them.

sentencepiece encodes the whole normalized text at once (``SentencePieceModel.normalize``:
its normalizer's rules, ``▁`` for each space). The views show it a word at a time: the
text is cut before each ``▁`` that no piece of the vocabulary crosses, so that no lattice
node and no merge spans a cut, and each word's steps are the whole text's.

- Unigram: a word's lattice holds every normal and user-defined piece that fits in it
  (unused pieces never do); a user-defined piece scores ``bytes * max_score - 0.1``
  (``max_score`` the highest normal piece's score, at least the smallest positive float)
  so that it is always taken; where no piece of one character starts, an unknown node of
  one character scores 10 below the least probable normal piece. The best path is the one
  ``engine.encode.unigram.best_path`` finds, as sentencepiece's optimized encoder does.
- BPE: a word starts as its characters, each user-defined symbol whole and never merged;
  each round merges the adjacent pair whose concatenation is the piece of highest score,
  the leftmost on a tie, until no pair makes a piece. A pair that makes an unused piece
  merges too, and is split back into its two parts at the end. A pair's rank, as the BPE
  view shows it, is its score's place among the model's scores, highest first (equal
  scores share a rank), so that the lowest rank, leftmost, is the pair sentencepiece takes.

Then, as sentencepiece does: unknown characters next to each other are one unknown piece;
with ``byte_fallback`` each is its UTF-8 bytes instead (``<0xE5>``...).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from engine.encode.sentencepiece_model import NORMAL, UNUSED, USER_DEFINED, SentencePieceModel
from engine.encode.tokenizer import EncodeStep, PreTokenTrace
from engine.encode.unigram import UNK_PENALTY, LatticeNode, WordLattice, best_path
from engine.errors import SettingsError

SPACE = "▁"
_SMALLEST_FLOAT = struct.unpack("<f", struct.pack("<I", 0x00800000))[0]
"""C's ``FLT_MIN``: where sentencepiece starts its highest score."""


class SentencePieceSteps:
    """What both step-by-step encodes share: the words of a text, the pieces a text can be
    cut into (normal, user-defined and unused), and the ids of a word's pieces."""

    def __init__(self, model: SentencePieceModel) -> None:
        self.model = model
        self.unk_id = model.unk_id
        self.special_ids = model.special_ids
        self._ids: dict[str, int] = {}
        for i, piece in enumerate(model.vocab):
            self._ids.setdefault(piece, i)
        self._pieces = {piece: i for piece, i in self._ids.items() if model.types[i] in (NORMAL, USER_DEFINED, UNUSED)}
        self._longest = max((len(p) for p in self._pieces), default=1)

    def token(self, i: int) -> str:
        """The piece of id ``i``; ``TokenIdError`` names an id that is none."""
        return self.model.token(i)

    def words(self, text: str) -> list[str]:
        """The normalized text, cut before each ``▁`` that no piece crosses."""
        normalized = self.model.normalize(text)
        crossed = bytearray(len(normalized) + 1)
        for start in range(len(normalized)):
            for end in range(start + 2, min(len(normalized), start + self._longest) + 1):
                if normalized[start:end] in self._pieces:
                    crossed[start + 1 : end] = b"\x01" * (end - start - 1)
        cuts = [p for p, c in enumerate(normalized) if c == SPACE and p and not crossed[p]]
        return [normalized[a:b] for a, b in zip([0, *cuts], [*cuts, len(normalized)], strict=True) if a < b]

    def _final_ids(self, pieces: Iterable[tuple[str, int]], after_unknown: bool) -> tuple[list[int], bool]:
        """The ids of a word's pieces, ``(text, id)``, and whether it ends on an unknown
        piece: an unknown run is one unknown id (the last word's run goes on into this one
        when ``after_unknown``), or with ``byte_fallback`` each character's bytes."""
        ids: list[int] = []
        for text, i in pieces:
            unknown = i == self.unk_id
            if unknown and self.model.byte_fallback:
                ids += [self._ids[f"<0x{b:02X}>"] for b in text.encode("utf-8")]
            elif not (unknown and after_unknown):
                ids.append(i)
            after_unknown = unknown
        return ids, after_unknown


class SentencePieceLattices(SentencePieceSteps):
    """A SentencePiece Unigram model's encode as each word's lattice and best path: what the
    Unigram encode view walks through."""

    def __init__(self, model: SentencePieceModel) -> None:
        super().__init__(model)
        normal = [s for s, kind in zip(model.scores, model.types, strict=True) if kind == NORMAL]
        self._max_score = max([_SMALLEST_FLOAT, *normal])
        self._unk_score = min(normal, default=0.0) - UNK_PENALTY

    def lattice(self, word: str) -> list[LatticeNode]:
        """Every candidate of ``word``'s lattice, by start then length."""
        nodes = []
        types, scores = self.model.types, self.model.scores
        for start in range(len(word)):
            single = False
            for end in range(start + 1, min(len(word), start + self._longest) + 1):
                piece = word[start:end]
                i = self._pieces.get(piece)
                if i is None or types[i] == UNUSED:
                    continue
                score = len(piece.encode("utf-8")) * self._max_score - 0.1 if types[i] == USER_DEFINED else scores[i]
                nodes.append(LatticeNode(start, end, piece, i, score))
                single = single or end == start + 1
            if not single:
                nodes.append(LatticeNode(start, start + 1, word[start], self.unk_id, self._unk_score, unknown=True))
        return nodes

    def encode_steps(self, text: str) -> list[WordLattice]:
        """Every word of ``text`` with its lattice, best path and ids."""
        out = []
        after_unknown = False
        for word in self.words(text):
            nodes = self.lattice(word)
            path, score = best_path(len(word), nodes)
            ids, after_unknown = self._final_ids(((nodes[k].piece, nodes[k].id) for k in path), after_unknown)
            out.append(WordLattice(word, tuple(nodes), tuple(path), score, tuple(ids)))
        return out


class SentencePieceMerges(SentencePieceSteps):
    """A SentencePiece BPE model's encode as each word's rounds of merges: what the BPE
    encode view walks through. ``vocab``: each id's piece as UTF-8."""

    def __init__(self, model: SentencePieceModel) -> None:
        super().__init__(model)
        self.vocab = {i: piece.encode("utf-8") for i, piece in enumerate(model.vocab)}
        by_score = sorted({model.scores[i] for i in self._pieces.values()}, reverse=True)
        place = {score: rank for rank, score in enumerate(by_score)}
        self._rank = {piece: place[model.scores[i]] for piece, i in self._pieces.items()}
        self._symbols = sorted((p for p, i in self._pieces.items() if model.types[i] == USER_DEFINED), key=len, reverse=True)

    def _id(self, piece: str) -> int:
        return self._ids.get(piece, self.unk_id)

    def _start(self, word: str) -> tuple[list[str], list[bool]]:
        """The word's first symbols, and which are user-defined (never merged)."""
        symbols: list[str] = []
        frozen: list[bool] = []
        at = 0
        while at < len(word):
            whole = next((s for s in self._symbols if word.startswith(s, at)), None)
            symbols.append(whole or word[at])
            frozen.append(whole is not None)
            at += len(symbols[-1])
        return symbols, frozen

    def _trace(self, word: str, after_unknown: bool) -> tuple[PreTokenTrace, bool]:
        symbols, frozen = self._start(word)
        parts: dict[str, tuple[str, str]] = {}  # unused pieces made, split back at the end
        steps = []
        while True:
            ranks: list[int | None] = [
                None if frozen[k] or frozen[k + 1] else self._rank.get(symbols[k] + symbols[k + 1]) for k in range(len(symbols) - 1)
            ]
            ranked = [(r, k) for k, r in enumerate(ranks) if r is not None]
            chosen = min(ranked)[1] if ranked else None
            before = [self._id(s) for s in symbols]
            if chosen is not None:
                left, right = symbols[chosen], symbols[chosen + 1]
                if self.model.types[self._pieces[left + right]] == UNUSED:
                    parts[left + right] = (left, right)
                symbols[chosen : chosen + 2] = [left + right]
                frozen[chosen : chosen + 2] = [False]
            steps.append(EncodeStep(before, ranks, chosen, [self._id(s) for s in symbols]))
            if chosen is None:
                break

        def split(piece: str) -> list[str]:
            if piece in parts and self.model.types[self._id(piece)] == UNUSED:
                return split(parts[piece][0]) + split(parts[piece][1])
            return [piece]

        pieces = [p for symbol in symbols for p in split(symbol)]
        ids, after_unknown = self._final_ids(((p, self._id(p)) for p in pieces), after_unknown)
        return PreTokenTrace(word, False, steps, ids), after_unknown

    def encode_steps(self, text: str) -> list[PreTokenTrace]:
        """Every word of ``text`` with its rounds of merges and its ids."""
        out = []
        after_unknown = False
        for word in self.words(text):
            trace, after_unknown = self._trace(word, after_unknown)
            out.append(trace)
        return out


def sentencepiece_steps(model: SentencePieceModel) -> SentencePieceLattices | SentencePieceMerges:
    """The step-by-step encode of ``model``'s kind; ``SettingsError`` for a word or char
    model, which has no steps to show."""
    if model.kind == "Unigram":
        return SentencePieceLattices(model)
    if model.kind == "BPE":
        return SentencePieceMerges(model)
    raise SettingsError(
        f"{model.path}: a SentencePiece {model.kind} model has no steps to show: print its tokens with --headless (or --json)"
    )
