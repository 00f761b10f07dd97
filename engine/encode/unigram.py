"""Encoding with a Unigram model: the most probable segmentation of each word (Viterbi).

As Hugging Face ``tokenizers`` runs the ``tokenizer.json`` that ``save_dir`` writes:

1. added tokens (``<unk>``...) are cut out of the raw text;
2. each run of spaces becomes one (the file's normalizer; a model without it skips this);
3. ``Metaspace``: each space becomes ``▁``, a ``▁`` goes before the text if it does not
   start with one, and the text is cut before each ``▁``: the words;
4. each word's lattice: at each character, every piece that starts there, with its
   log-probability; where no piece of one character starts, an unknown node of one
   character scored 10 below the lowest piece. The best path maximizes the sum of the
   log-probabilities. Going left to right, a node keeps the first path that reaches it with
   the highest score (a tie keeps the path whose last piece is longer), as HF's
   ``encode_optimized`` does; unknown characters next to each other on the path are one
   ``<unk>``.

The ids equal ``tokenizers``' ``encode(text, add_special_tokens=False).ids``. ``encode``
caches each distinct word's ids; ``encode_steps`` gives each word's lattice and best path,
and ``nbest`` a word's runners-up, for a screen to show.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import regex

from engine.corpus.stages import AddedToken, AddedTokens
from engine.encode.flat import FlatBatches
from engine.encode.token_ids import TokenTexts, as_id
from engine.errors import ModelFileError
from engine.formats import unigram_files as files
from engine.formats.atomic import atomic_write, make_dir
from engine.formats.tokenizer_files import TOKENIZER_JSON, added_tokens
from engine.train.unigram.rule import SPECIAL_TOKENS, UNKNOWN

if TYPE_CHECKING:
    from engine.train.unigram.trainer import UnigramTrainer

UNK_PENALTY = 10.0
"""How far below the lowest piece an unknown character scores (SentencePiece's and HF's)."""
SPACE = files.REPLACEMENT
_SPACES = regex.compile(files.SPACES)


@dataclass(frozen=True, slots=True)
class LatticeNode:
    """A candidate piece of a word's lattice: the word's characters ``start:end``."""

    start: int
    end: int
    piece: str
    id: int
    """The piece's id, or the unknown id for an unknown character."""
    log_prob: float
    unknown: bool = False


@dataclass(frozen=True, slots=True)
class WordLattice:
    """One word (or added token) of an encode: its lattice and best path."""

    word: str
    """The word as segmented (with its ``▁``), or an added token's text."""
    nodes: tuple[LatticeNode, ...]
    """Every candidate, by start then length."""
    best: tuple[int, ...]
    """The best path, as indices into ``nodes``."""
    score: float
    """The best path's log-probability."""
    ids: tuple[int, ...]
    """The word's ids: the best path's, unknown characters next to each other as one."""
    special: bool = False


def best_path(length: int, nodes: Sequence[LatticeNode]) -> tuple[list[int], float]:
    """The best path through the lattice ``nodes`` of a word of ``length`` characters
    (indices into ``nodes``), and its score: each end keeps the first candidate with the
    highest score, candidates taken by start, then length, as HF and SentencePiece do."""
    score: list[float | None] = [0.0] + [None] * length
    via = [-1] * (length + 1)
    for k, node in enumerate(nodes):
        base = score[node.start]
        assert base is not None  # every character has a node, so every start is reached
        s = node.log_prob + base
        best = score[node.end]
        if best is None or s > best:
            score[node.end] = s
            via[node.end] = k
    path = []
    at = length
    while at > 0:
        path.append(via[at])
        at = nodes[via[at]].start
    path.reverse()
    total = score[length]
    return path, total if total is not None else 0.0


class UnigramTokenizer(FlatBatches):
    """A Unigram tokenizer: ``vocab`` (id -> ``(piece, log-probability)``), the unknown
    piece's id, and the added tokens (strings at their ids in ``vocab``, or ``AddedToken``s).
    ``collapse_spaces``: make each run of spaces one first (the file's normalizer)."""

    def __init__(
        self,
        vocab: Sequence[tuple[str, float]],
        unk_id: int = 0,
        special_tokens: Sequence[str | AddedToken] = SPECIAL_TOKENS,
        *,
        collapse_spaces: bool = True,
        decoder: bool = True,
        cache_size: int = 1 << 17,
    ) -> None:
        self.vocab = [(str(p), float(s)) for p, s in vocab]
        if not self.vocab:
            raise ValueError("the vocabulary is empty")
        self._ids: dict[str, int] = {}
        for i, (piece, _) in enumerate(self.vocab):
            if not piece:
                raise ValueError(f"piece {i} is empty")
            self._ids.setdefault(piece, i)  # HF looks a string up to its first id
        if not 0 <= unk_id < len(self.vocab):
            raise ValueError(f"unk_id {unk_id} is not the id of a piece")
        self.unk_id = unk_id
        self.added_tokens: list[AddedToken] = []
        for token in added_tokens(special_tokens):
            i = self._ids.get(token.content, -1) if token.id < 0 else token.id
            if not 0 <= i < len(self.vocab) or self.vocab[i][0] != token.content:
                raise ValueError(f"special token {token.content!r} is not a piece of the vocabulary at id {i}")
            self.added_tokens.append(dataclasses.replace(token, id=i))
        self.special_tokens = [t.content for t in self.added_tokens]
        self.special_ids = {t.content: t.id for t in self.added_tokens}
        self.collapse_spaces = collapse_spaces
        self.decoder = decoder
        self.cache_size = cache_size
        self._added = AddedTokens(self.added_tokens)
        self._scores = [s for _, s in self.vocab]
        self._unk_score = min(self._scores) - UNK_PENALTY
        self._longest = max(len(p) for p, _ in self.vocab)
        self._words: dict[str, tuple[int, ...]] = {}
        self._texts: tuple[bool, TokenTexts] | None = None
        """``decoder`` and the texts of the pieces by it, once ``decode`` has run."""

    def token(self, i: int) -> str:
        """The piece of id ``i``; ``TokenIdError`` names an id that is none."""
        return self.vocab[as_id(i, len(self.vocab) - 1)][0]

    def digest(self) -> str:
        """BLAKE2b of what encoding depends on."""
        settings = [self.vocab, self.unk_id, [dataclasses.astuple(t) for t in self.added_tokens], self.collapse_spaces]
        return hashlib.blake2b(json.dumps(settings).encode("utf-8"), digest_size=16).hexdigest()

    @classmethod
    def from_trainer(cls, trainer: UnigramTrainer) -> UnigramTokenizer:
        """The model as trained so far: the special tokens, then the pieces by score."""
        vocab = trainer.vocab()
        specials = [AddedToken(t, i) for i, t in enumerate(trainer.special_tokens)]
        return cls(vocab, trainer.special_tokens.index(UNKNOWN), specials)

    # -- files ----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> UnigramTokenizer:
        """Load a Unigram ``tokenizer.json`` (or the one in a directory)."""
        data = files.read_unigram(path)
        try:
            return cls(data.vocab, data.unk_id, data.added_tokens, collapse_spaces=data.collapse_spaces, decoder=data.decoder)
        except ValueError as e:
            raise ModelFileError(f"{data.path}: {e}") from None

    def files(self) -> dict[str, str]:
        """What ``save_dir`` writes, by file name: ``tokenizer.json``."""
        return {TOKENIZER_JSON: files.unigram_json(self.vocab, self.unk_id, self.added_tokens, self.collapse_spaces)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an HF ``tokenizer.json`` (loads in ``tokenizers.Tokenizer.from_file``)."""
        return atomic_write(path, self.files()[TOKENIZER_JSON])

    def save_dir(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``tokenizer.json`` into ``directory`` (made if need be)."""
        directory = make_dir(directory)
        return [atomic_write(directory / name, text) for name, text in self.files().items()]

    # -- the lattice ----------------------------------------------------------------------

    def lattice(self, word: str) -> list[LatticeNode]:
        """Every candidate of ``word``'s lattice, by start then length: the pieces that
        start at each character, and an unknown node where no piece of one character does."""
        nodes = []
        find = self._ids.get
        for start in range(len(word)):
            single = False
            for end in range(start + 1, min(len(word), start + self._longest) + 1):
                i = find(word[start:end])
                if i is not None:
                    nodes.append(LatticeNode(start, end, word[start:end], i, self._scores[i]))
                    single = single or end == start + 1
            if not single:
                nodes.append(LatticeNode(start, start + 1, word[start], self.unk_id, self._unk_score, unknown=True))
        return nodes

    def _ids_of(self, nodes: Sequence[LatticeNode], path: Sequence[int]) -> tuple[int, ...]:
        """The ids of a path: unknown characters next to each other are one string, the id
        of that string if it is a piece (HF looks it up), else the unknown id."""
        ids: list[int] = []
        unknown = ""
        for k in path:
            node = nodes[k]
            if node.id == self.unk_id:
                unknown += node.piece
                continue
            if unknown:
                ids.append(self._ids.get(unknown, self.unk_id))
                unknown = ""
            ids.append(node.id)
        if unknown:
            ids.append(self._ids.get(unknown, self.unk_id))
        return tuple(ids)

    def _word_ids(self, word: str) -> tuple[int, ...]:
        nodes = self.lattice(word)
        path, _ = best_path(len(word), nodes)
        return self._ids_of(nodes, path)

    def nbest(self, word: str, k: int) -> list[tuple[tuple[str, ...], float]]:
        """The ``k`` most probable segmentations of ``word`` (a ``▁``-word), best first, each
        with its log-probability: the best path and its runners-up."""
        nodes = self.lattice(word)
        by_end: dict[int, list[LatticeNode]] = {}
        for node in nodes:
            by_end.setdefault(node.end, []).append(node)
        # the k best paths to each end, as (score, pieces), found left to right
        start: list[tuple[float, tuple[str, ...]]] = [(0.0, ())]
        paths = [start] + [[] for _ in word]
        for end in range(1, len(word) + 1):
            options = ((s + n.log_prob, (*p, n.piece)) for n in by_end.get(end, ()) for s, p in paths[n.start])
            paths[end] = heapq.nlargest(k, options, key=lambda o: o[0])
        return [(pieces, score) for score, pieces in paths[len(word)]]

    # -- text to words --------------------------------------------------------------------

    def _normalized(self, piece: str) -> str:
        return _SPACES.sub(" ", piece) if self.collapse_spaces and "  " in piece else piece

    @staticmethod
    def words(text: str) -> list[str]:
        """``Metaspace``'s words of a (normalized) piece of text: spaces as ``▁``, one before
        the text, cut before each ``▁``."""
        text = text.replace(" ", SPACE)
        if not text.startswith(SPACE):
            text = SPACE + text
        return [SPACE + w for w in text[1:].split(SPACE)] if SPACE in text[1:] else [text]

    def _pieces(self, text: str) -> Iterator[tuple[str, AddedToken | None]]:
        """``(word, token)`` in order: each added token with its text, and each word."""
        for piece, token in self._added.split(text):
            if token is not None:
                yield piece, token
                continue
            for word in self.words(self._normalized(piece)):
                yield word, None

    # -- public API -----------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        ids: list[int] = []
        cached = self._words
        if len(cached) > self.cache_size:
            cached.clear()
        for word, token in self._pieces(text):
            if token is not None:
                ids.append(token.id)
                continue
            got = cached.get(word)
            if got is None:
                got = cached[word] = self._word_ids(word)
            ids += got
        return ids

    def encode_batch(self, texts: Iterable[str], workers: int | None = None) -> list[list[int]]:
        """``[encode(text) for text in texts]``: the Viterbi runs in Python, which holds the
        GIL, so threads would only take turns (``workers`` is accepted, as BPE's takes it)."""
        return [self.encode(text) for text in texts]

    def encode_steps(self, text: str) -> list[WordLattice]:
        """Every word (and added token) of ``text`` with its lattice and best path."""
        out = []
        for word, token in self._pieces(text):
            if token is not None:
                out.append(WordLattice(word, (), (), 0.0, (token.id,), special=True))
                continue
            nodes = self.lattice(word)
            path, score = best_path(len(word), nodes)
            out.append(WordLattice(word, tuple(nodes), tuple(path), score, self._ids_of(nodes, path)))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` as HF's ``decode(ids, skip_special_tokens=False)`` gives it:
        ``▁`` as a space, none kept in the first token; with no decoder, the tokens joined
        by spaces. ``TokenIdError`` names the first bad id and where it is."""
        return self._token_texts().decode(ids)

    def _token_texts(self) -> TokenTexts:
        """Each piece's text in a decode, by ``decoder`` (made again when it is changed)."""
        if self._texts is None or self._texts[0] is not self.decoder:
            pieces = [p for p, _ in self.vocab]
            if self.decoder:
                texts = TokenTexts([p.replace(SPACE, "") for p in pieces], [p.replace(SPACE, " ") for p in pieces])
            else:
                texts = TokenTexts(pieces, [" " + p for p in pieces])
            self._texts = (self.decoder, texts)
        return self._texts[1]

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """``decode(ids)`` as UTF-8."""
        return self.decode(ids).encode("utf-8")
