"""Encoding and decoding with a trained vocabulary (seed lecture 000, PART 4).

Special tokens are matched first; the rest is pre-tokenized and each pre-token is merged
by lowest merge rank first: list every adjacent pair with its rank, merge the lowest
(leftmost on a tie), repeat until no pair is in the merge list. This is what GPT-2 and
tiktoken do. ``encode_steps`` records the same loop as it runs, for the encode view.

Under the compiled families' patterns (GPT-2, GPT-4/cl100k, o200k, Llama-3, Qwen2: see
``engine.corpus.pretokenize.KNOWN_PATTERNS``) all of it runs in C
(``engine/encode/_encoder_core.c``): the pattern is matched by hand
(``engine/corpus/_pretokenize_core.h``), each pre-token's ids come from the vocabulary, a
cache or the merge loop, special tokens are cut out first, and the GIL is released
meanwhile, so ``encode_batch`` encodes in parallel threads. Where added tokens are matched as
HF matches them, or a normalizer runs, those stay in Python and the pieces between them are
encoded in C. A custom pattern runs through ``regex``, with ids travelling as strings of
code points (``chr(id)``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import struct
import sys
import threading
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from itertools import accumulate, chain, islice, pairwise, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.shards import text_pieces
from engine.corpus.stages import AddedToken, PatternSpec, Stage, describe, simplest
from engine.encode._encoder_core import (
    Encoder,
    MergeRanks,
    PackedIds,
    SharedCache,
    Vocab,
    fill_ids,
    join_ends,
    jsonl_field_utf8,
    kept_room,
    unfilled_ids,
    unit_ends,
    utf8_reaches,
)
from engine.encode.flat import UINT32, FlatIds, flat_ids
from engine.encode.token_ids import as_id, joined
from engine.errors import ModelFileError, SettingsError
from engine.formats import rank_files
from engine.formats import tokenizer_files as formats
from engine.formats.atomic import atomic_write, make_dir
from engine.train.trainer import Trainer

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from engine.encode.sentencepiece_model import SentencePieceModel
    from engine.encode.unigram import UnigramTokenizer
    from engine.encode.wordpiece import WordPieceTokenizer

Pair = tuple[int, int]

_NONE = 1 << 62
"""Rank of a pair that is not in the merge list: above every real rank."""

_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"
_TYPECODES = {2: "H", 4: UINT32}

ID_WIDTHS = {"uint16": 2, "uint32": 4}
"""Bytes of each unsigned integer type a file of ids may hold."""

U = TypeVar("U")
K = TypeVar("K")
T = TypeVar("T")
R = TypeVar("R")
Out = TypeVar("Out")
W = TypeVar("W")

UNIT_CHARS = 1 << 16
"""Characters of text a worker thread takes at once (whole texts, or pieces of a longer
one), encoded with the GIL released once: enough that handing the work to a thread costs
little beside it, little enough that the threads share the work evenly. A list of texts
whose length is known goes in larger units, up to ``MAX_UNIT_CHARS`` (``Tokenizer._units``)."""

MAX_UNIT_CHARS = 1 << 20
"""The largest unit, whatever the size of the texts."""

UNITS_A_THREAD = 6
"""About how many units each thread takes of a list of texts: each hand-over of a unit
wakes a thread (tens of microseconds), and two threads on en-mix-6m's 15,555 documents
went 318 -> 389 MB/s from units of 64 K characters (a hundred) to 512 K (thirteen); fewer
left one thread waiting at the end."""

PIECE_CHARS = 1 << 18
"""About how long the pieces are, at most, that a text longer than ``2 * UNIT_CHARS`` is cut
into, so that the threads encode one long text together (``_piece_ends``)."""

LEAST_PIECE = 1 << 15
"""About how long the pieces are, at least, where the threads meet (``_piece_ends``)."""


def _piece_ends(length: int, threads: int) -> list[int]:
    """Where the pieces of a text of ``length`` characters end, but the last (at the end), for
    ``threads`` threads that take them from both ends: from each end, pieces of a
    ``2 * threads``-th of what is left, from ``PIECE_CHARS`` down to ``LEAST_PIECE``. One
    core may run a third slower than the other: pieces of one length left one thread waiting
    for the other up to a piece's time (Chinese under o200k: 1 ms of a 4.5 ms call)."""
    starts, ends = [], []
    low, high = 0, length
    while True:
        size = min(PIECE_CHARS, max(LEAST_PIECE, (high - low) // (2 * threads)))
        if high - low < 2 * size:
            break
        low, high = low + size, high - size
        starts.append(low)
        ends.append(high)
    return starts + ends[::-1]


CUT_WINDOW = 4096
"""Characters before a piece's end looked in for a cut, where the text holds no special token;
then four and sixteen times as many, then the whole piece. Chinese prose may have no cut in
4,096 characters (zh-xiyouji: one every 7,000 or so): cutting it into pieces took 0.38-0.44
ms when the next look was the whole piece, 0.26-0.33 now, of a warm encode in two threads
of 4.4 ms."""

JOINED_APART = 1 << 18
"""Ids of a batch from at least this many threads' units copied into one buffer by the
threads together (``Tokenizer._joined_ends``): fewer are copied in less time than waking a
helper takes (0.1 ms)."""

THREADED_BYTES = 1 << 20
"""The least UTF-8 a list or tuple of texts holds for more than one thread to encode it:
below it a helper saves less than waking it and handing it units costs (two threads on 300
of en-mix-6m's documents, 0.2 ms of work, ran at 0.36x one's speed, on 1,000 at 0.78x, on
4,000 at 1.29x)."""

LONG_LINE = 4 * PIECE_CHARS
"""The bytes past which a JSONL line whose text the encoder reads is cut into pieces of
about ``PIECE_CHARS`` bytes that the threads encode together: en-mix-6m's documents as
JSONL end with a line of 2.4 MB, which took one thread 4.9 ms at the end of a call of 12.6
in two."""

STREAM_THREADED_UNITS = 4
"""The least units (``UNIT_CHARS`` each) a stream of texts gives for more than one thread to
encode it: two threads on two units of English (300 of en-mix-6m's documents) ran at
0.82-0.94x one's speed, on three at 0.97-1.04x, on four at 1.10x, on five at 1.14x."""

_TEXT_CHARS = 64
"""What a text counts for in a unit beyond its characters: its own cost (a list, a call)."""

_WHOLE, _PART, _LAST = 0, 1, 2

Unit = list[str] | tuple[str, int, int]
"""What a worker thread takes at once: whole texts, or a piece of one, ``(text, start, end)``."""

JsonlBlock = tuple[bytes, int, Callable[[bytes, int], "str | None"]]
"""Whole lines of a JSONL file (each ending with a newline, but perhaps the file's last),
the byte where they start in their shard, and what reads one line as Python's ``json``
does, given where it starts: its text, or None for a blank line or a record skipped (a
``CorpusError`` naming the line for a bad one), from any thread
(``engine.corpus.shards.shard_jsonl_blocks``)."""


class _LinePiece(NamedTuple):
    """A piece of the text of a long JSONL line (``LONG_LINE``), and whether it is its last."""

    data: memoryview
    last: bool


TextBlock = tuple[bytes, int, bool, Callable[[bytes, int], list[str]]]
"""A block of a plain-text file's UTF-8, cut where a pre-token always starts (so it encodes as
within the whole text), the byte of the file it starts at, whether it ends the file (a
document), and what reads a block as the file's texts, given that byte (decoded with the
file's errors: a ``CorpusError`` naming the byte where they are strict), from any thread
(``engine.corpus.shards.shard_text_blocks``)."""


@dataclass(slots=True)
class _Pending(Generic[U, K, R]):
    """A unit handed to the helper threads: its future (the result, when this thread took the
    unit and encoded it), the unit and its kind."""

    future: Future[R]
    unit: U
    kind: K


def _code_points(ids: str) -> list[int]:
    """``list(map(ord, ids))``, faster: through the string's UTF-32 bytes (ids may be lone
    surrogates, hence ``surrogatepass``)."""
    return array(UINT32, ids.encode(_UTF32, "surrogatepass")).tolist()


@dataclass(frozen=True, slots=True)
class EncodeStep:
    """One round of the merge loop on one pre-token."""

    parts: list[int]
    """Token ids before this round."""
    ranks: list[int | None]
    """Merge rank of each adjacent pair ``(parts[i], parts[i+1])``; None: not in merges."""
    chosen: int | None
    """Index of the pair merged now (lowest rank, leftmost); None: nothing left to merge."""
    after: list[int]
    """Token ids after this round."""


@dataclass(frozen=True, slots=True)
class PreTokenTrace:
    """The story of one pre-token (or special token) of an encode."""

    text: str
    special: bool
    steps: list[EncodeStep]
    ids: list[int]


class Tokenizer:
    """A byte-level BPE tokenizer: ``vocab`` (id -> bytes) and ``merges`` in rank order.

    ``special_tokens``: strings (each keeps its id in ``vocab``, or takes the next one
    after the largest), ``{string: id}``, or ``AddedToken``s (HF's added tokens, with
    their ids and how they are matched). ``pattern``: a name from ``PATTERNS``, a regex,
    or stages (``engine.corpus.stages``). ``normalizer``: None or ``"NFC"``. ``cache_size``:
    the pre-tokens whose ids the tokenizer's cache keeps, across calls and for all threads
    (about 70 bytes each, taken as the cache fills; see ``cache_size`` below).
    """

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        special_tokens: Sequence[str | AddedToken] | Mapping[str, int] | None = None,
        pattern: str | Sequence[Stage] = "gpt2",
        cache_size: int = 1 << 17,
        normalizer: str | None = None,
        *,
        merge_ids: tuple[list[int], list[int], list[int]] | None = None,
    ) -> None:
        """``merge_ids``: the ids of each merge's left, right and result, when the caller
        has them (a rank file's reader does): they are not looked up again."""
        self.vocab = dict(vocab)
        self.merges = list(merges)
        self.pattern: PatternSpec = simplest(pattern)
        self.normalizer = normalizer
        self.encoder = dict(zip(self.vocab.values(), self.vocab, strict=True))
        given = [AddedToken(s, i) for s, i in special_tokens.items()] if isinstance(special_tokens, Mapping) else special_tokens or []
        self.added_tokens: list[AddedToken] = []
        """Every token cut out of the text whole, with its id."""
        for token in formats.added_tokens(given):
            encoded = token.content.encode("utf-8")
            if token.id < 0:
                i = self.encoder.get(encoded)
                if i is None:
                    i = max(self.vocab, default=-1) + 1
                token = AddedToken(token.content, i, token.special, token.normalized, token.lstrip, token.rstrip, token.single_word)
            elif self.vocab.setdefault(token.id, encoded) != encoded:
                raise ValueError(
                    f"special token {token.content!r} has id {token.id}, which the vocabulary gives to {self.vocab[token.id]!r}"
                )
            self.vocab[token.id] = encoded
            self.encoder[encoded] = token.id
            self.added_tokens.append(token)
        self.special_tokens = [t.content for t in self.added_tokens]
        self.special_ids = {t.content: t.id for t in self.added_tokens}
        self._special_set = frozenset(self.special_ids.values())
        self.max_id = max(self.vocab, default=0)
        """The largest token id."""
        if min(self.vocab, default=0) < 0 or self.max_id >= sys.maxunicode:
            raise ValueError(f"token ids must lie in 0-{sys.maxunicode - 1}")
        self.pretokenizer = PreTokenizer(self.pattern, self.added_tokens, normalizer)
        missing = [b for b in range(256) if bytes([b]) not in self.encoder]
        if missing:
            raise ValueError(f"vocabulary lacks the single byte {missing[0]:#04x}")
        self._byte_ids = [self.encoder[bytes([b])] for b in range(256)]
        self._rank_of: dict[Pair, int] = {}
        self._merged: list[int] = []
        """Id made by each merge rank."""
        if merge_ids is not None:
            lefts, rights, self._merged = merge_ids
        else:
            get = self.encoder.__getitem__
            try:
                lefts, rights = (list(map(get, side)) for side in zip(*merges, strict=True)) if merges else ([], [])
                self._merged = list(map(get, map(bytes.__add__, *zip(*merges, strict=True)))) if merges else []
            except KeyError:
                rank, (left, right) = next((r, m) for r, m in enumerate(merges) if not {m[0], m[1], m[0] + m[1]} <= self.encoder.keys())
                raise ValueError(f"merge {rank} ({left!r}, {right!r}) uses a token not in the vocabulary") from None
        self._rank_of = dict(zip(zip(lefts, rights, strict=True), range(len(lefts)), strict=True))
        if len(self._rank_of) < len(lefts):  # a pair merged twice keeps its first rank
            self._rank_of = {}
            for rank, pair in enumerate(zip(lefts, rights, strict=True)):
                self._rank_of.setdefault(pair, rank)
        self._ranks = MergeRanks(self._byte_ids, self._rank_of, self._merged)
        self._table = Vocab(self.vocab)
        self.cache_size = cache_size
        """Pre-tokens a cache may hold: the tokenizer's cache, shared by every thread and kept
        across calls, takes no more once full; then each encoder's own cache of as many takes
        the rest and is emptied when full, so memory stays bounded."""
        self._direct = False
        self._shared: SharedCache | None = None
        """The pre-token cache of every compiled encoder of this tokenizer (made on first use)."""
        self._encoder: Encoder | None = None
        """The compiled encoder of calls in one thread (named patterns only; made on first use)."""
        self._idle: list[Encoder] = []
        """The worker threads' encoders between calls: each keeps its hot table warm."""
        self._pools: dict[int, ThreadPoolExecutor] = {}
        """The worker threads of each thread count asked for (``_pool``)."""
        self._piece_encoder: Encoder | None = None
        """The compiled encoder of the pieces between added tokens, where the pattern is
        compiled but cutting out the added tokens is not (``_new_piece_encoder``)."""
        self._pretokens: dict[str, str] = {}
        """Ids of each pre-token, under a custom pattern."""
        self._digest: str | None = None
        """``digest()``, once made."""

    @property
    def direct(self) -> bool:
        """Emit a pre-token that is a vocabulary entry as that entry, skipping its merge loop
        (as tiktoken does, and HF with ``ignore_merges``). The same ids only when every entry
        encodes to itself: proven for trained vocabularies (see ``from_trainer``) and rank
        files (see ``from_tiktoken``), checked entry by entry on loading other files and by
        ``verify_direct``, kept in ``tokenizer.json`` as ``ignore_merges``."""
        return self._direct

    @direct.setter
    def direct(self, on: bool) -> None:
        self._direct = on
        self._encoder = self._piece_encoder = self._shared = None  # their caches were filled the other way
        self._idle = []
        self._pretokens.clear()

    @property
    def _compiled(self) -> bool:
        """Whether encoding runs in C: under a pattern the compiled pre-tokenizer knows
        (``KNOWN_PATTERNS``, by its text), with special tokens cut out as plain strings in
        one pass, no normalizer, and no empty special token."""
        return self.pretokenizer.chunked and "" not in self.special_ids

    def _new_encoder(self, shared: SharedCache | None = None) -> Encoder | None:
        """A compiled encoder with an empty cache of its own, looking first in ``shared``
        (default: the tokenizer's cache); None where encoding goes through ``regex``."""
        if not self._compiled:
            return None
        specials = [(s, self.special_ids[s]) for s in sorted(set(self.special_tokens), key=len, reverse=True)]
        shared = self._cache() if shared is None else shared
        return Encoder(self._ranks, self._table, self.pretokenizer.family_id, self._direct, self.cache_size, specials, shared)

    def _own_encoder(self) -> Encoder | None:
        """The encoder of calls in this thread, made on first use (``_new_encoder``)."""
        if self._encoder is None:
            self._encoder = self._new_encoder()
        return self._encoder

    def _cache(self) -> SharedCache:
        """The tokenizer's pre-token cache, made on first use."""
        if self._shared is None:
            self._shared = SharedCache(self._ranks, self._table, self._direct, self.cache_size)
        return self._shared

    def _new_piece_encoder(self) -> Encoder | None:
        """Where added tokens matched as HF matches them or a normalizer (Qwen2's NFC) keep
        the cutting out of added tokens in Python, but the pattern is compiled: an encoder of
        the pieces between them, with no special tokens. In its vocabulary every entry whose
        bytes are an added token's is empty, never found (a pre-token is never empty), for
        such a pre-token is merged (``_encode_pretoken``). None under a pattern that runs
        through ``regex``."""
        if self.pretokenizer.family is None:
            return None
        added = {token.content.encode("utf-8") for token in self.added_tokens}
        table = Vocab({i: b"" if token in added else token for i, token in self.vocab.items()})
        return Encoder(self._ranks, table, self.pretokenizer.family_id, self._direct, self.cache_size, [], None)

    def digest(self) -> str:
        """BLAKE2b of what encoding depends on (vocabulary, merge ranks, special tokens,
        pattern): the same model gives the same digest whichever files it was loaded from.
        The compiled tables hand over their contents whole, in id and rank order; made once
        (they never change), a few milliseconds."""
        if self._digest is not None:
            return self._digest
        h = hashlib.blake2b(digest_size=16)
        for table in (self._table.canonical(), self._ranks.canonical()):
            h.update(struct.pack("<Q", len(table)) + table)
        settings: list[Any] = [self.special_tokens, describe(self.pattern)]
        if self.normalizer or not self.pretokenizer.plain:  # how the text is matched and changed besides
            settings += [self.normalizer, [dataclasses.astuple(t) for t in self.added_tokens]]
        h.update(json.dumps(settings).encode("utf-8"))
        self._digest = h.hexdigest()
        return self._digest

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as what it is made from: the compiled merge table is rebuilt on load."""
        settings = (self.vocab, self.merges, self.added_tokens, self.pattern, self.cache_size, self.normalizer)
        return (_unpickle, (settings, self.direct))

    @classmethod
    def from_trainer(cls, trainer: Trainer) -> Tokenizer:
        """The tokenizer as trained so far.

        Every trained entry encodes to itself, so ``direct`` is on: the entry made by merge
        ``r = (a, b)`` first appeared where ``a`` and ``b`` were whole tokens of a word, so no
        merge before ``r`` crossed its span there; merging its bytes alone by rank order
        therefore goes through the same steps, reaches ``[a, b]`` and then merge ``r``.
        """
        tokenizer = cls(trainer.vocab, trainer.merges, list(trainer.special_tokens), trainer.pattern)
        tokenizer.direct = True
        return tokenizer

    def verify_direct(self) -> bool:
        """Turn ``direct`` on if every vocabulary entry encodes to itself (true for GPT-2's
        files)."""
        self.direct = self._entries_encode_to_themselves()
        return self.direct

    def _entries_encode_to_themselves(self) -> bool:
        """Whether each vocabulary entry (special tokens aside) comes out of the compiled
        merge loop over its own bytes as itself: the definition ``direct`` needs, checked
        entry by entry, faster than ``_merges_rebuild_vocab`` proves it (a tenth of a second
        for 100,000 entries) and conclusive either way."""
        specials = self._special_set
        encoder = self.encoder
        ids = self._ranks.ids
        return all(
            ids(token) == chr(encoder[token])
            for i, token in self.vocab.items()
            if len(token) > 1 and i not in specials and encoder[token] == i
        )

    def _merges_rebuild_vocab(self) -> bool:
        """True when the merges prove that every vocabulary entry encodes to itself; False
        when they do not (the entries may still do).

        Goes through the merges in rank order, each entry at the first merge ``r = (a, b)``
        that makes it, ``a`` and ``b`` proven before (a byte encodes to itself): if merging
        the bytes of ``a + b`` keeps ``a`` and ``b`` apart (``_apart``), it reaches
        ``[a, b]`` and then merge ``r``.
        """
        merged = self._merged
        recipes = {i: (-1, i, i) for i in self._byte_ids}
        """Proven entry -> (rank of the merge that makes it, its left, its right)."""
        for (a, b), r in self._rank_of.items():  # in rank order, each pair at its first rank
            t = merged[r]
            if t in recipes:
                continue  # made by an earlier merge
            if recipes.get(a, (r,))[0] >= r or recipes.get(b, (r,))[0] >= r:
                return False  # an operand not proven, or made by a later merge
            if not self._apart(recipes, a, b):
                return False
            recipes[t] = (r, a, b)
        specials = set(self.special_ids.values())
        return all(i in recipes for i in self.encoder.values() if i not in specials)

    def _apart(self, recipes: dict[int, tuple[int, int, int]], a: int, b: int) -> bool:
        """Whether merging the bytes of ``a + b`` (both proven, in ``recipes``) reaches
        ``[a, b]`` with no merge across the seam between them.

        Until a pair across the seam is chosen, it runs the merges of ``a`` and of ``b`` side
        by side, in rising rank order (each merge comes after those that made its operands).
        The seam pair ``(x, y)`` changes only when a new last token of ``a``'s side (on
        ``a``'s right spine) is made, at rank ``lx``, or a new first token of ``b``'s side (on
        ``b``'s left spine), at rank ``my``; it is chosen before that iff its rank ``c < lx``
        and ``c <= my`` (ties go to the leftmost pair). Walks back from ``(a, b)``.
        """
        rank_of = self._rank_of
        x, y, lx, my = a, b, _NONE, _NONE
        while True:
            made_x, _, right_of_x = recipes[x]
            made_y, left_of_y, _ = recipes[y]
            if made_x > made_y:
                lx, x = made_x, right_of_x
            elif made_y >= 0:  # on a tie a's side merges first, so b's came last
                my, y = made_y, left_of_y
            else:
                return True
            c = rank_of.get((x, y), _NONE)
            if c < lx and c <= my:
                return False

    # -- files ----------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], pattern: str | None = None) -> AnyTokenizer:
        """Load a ``tokenizer.json``, a directory holding one or ``vocab.json`` + ``merges.txt``,
        or a rank file (``.tiktoken``, ``.tiktoken.gz``; see ``from_tiktoken``: ``pattern``
        is its pre-tokenizer, needed unless it is a published one). Other kinds open as their
        own class, imported only then: a WordPiece model (its ``tokenizer.json``, BERT's
        ``vocab.txt``, or a directory of them) as a ``WordPieceTokenizer``, a Unigram
        ``tokenizer.json`` as a ``UnigramTokenizer``, and a SentencePiece ``.model`` (or a
        directory holding one and no ``tokenizer.json``) as a ``SentencePieceModel``, through
        the optional ``sentencepiece`` package."""
        if rank_files.is_rank_file(path):
            return cls.from_tiktoken(path, pattern)
        if pattern is not None:
            raise SettingsError(f"{path}: a pattern goes with a .tiktoken rank file; this model names its own pre-tokenizer")
        from engine.formats.unigram_files import is_unigram
        from engine.formats.wordpiece_files import is_wordpiece

        if is_wordpiece(path):
            from engine.encode.wordpiece import WordPieceTokenizer

            return WordPieceTokenizer.load(path)
        if is_unigram(path):
            from engine.encode.unigram import UnigramTokenizer

            return UnigramTokenizer.load(path)
        from engine.encode import sentencepiece_model

        model_file = sentencepiece_model.model_file(path)
        if model_file is not None:
            return sentencepiece_model.SentencePieceModel.load(model_file)
        return cls._from_data(formats.read_model(path))

    @classmethod
    def from_tiktoken(
        cls, path: str | os.PathLike[str], pattern: str | None = None, special_tokens: Mapping[str, int] | None = None
    ) -> Tokenizer:
        """Load tiktoken's ranks (``.tiktoken`` or ``.tiktoken.gz``): ``cl100k_base`` and
        ``o200k_base`` are known by their content and come with their pattern and special
        tokens; another file needs ``pattern`` (a name from ``PATTERNS`` or a regex) and
        has the ``special_tokens`` given, at their ids.

        The merges are recovered from the ranks (``engine.formats.rank_files``), so ids
        equal tiktoken's on every text. Every entry then encodes to itself (its bytes go
        through the steps that recovered its merge), so ``direct`` is on.
        """
        ranks = rank_files.read_rank_file(path, pattern, special_tokens)
        try:
            tokenizer = cls(ranks.vocab, ranks.merges, ranks.special_tokens, ranks.pattern, merge_ids=ranks.merge_ids)
        except ValueError as e:
            raise SettingsError(f"{path}: {e}") from None
        tokenizer.direct = True
        return tokenizer

    @classmethod
    def from_files(
        cls,
        vocab_json: str | os.PathLike[str],
        merges_txt: str | os.PathLike[str],
        special_tokens: list[str] | None = None,
    ) -> Tokenizer:
        """Load GPT-2 style files; entries no merge makes (``<|endoftext|>``) become special tokens."""
        return cls._from_data(formats.read_gpt2_files(vocab_json, merges_txt, special_tokens))

    @classmethod
    def _from_data(cls, data: formats.ModelData) -> Tokenizer:
        try:
            tokenizer = cls(data.vocab, data.merges, data.special_tokens, data.pattern, normalizer=data.normalizer)
        except ValueError as e:
            raise ModelFileError(f"{data.path}: {e}") from None
        tokenizer.direct = data.direct or tokenizer._entries_encode_to_themselves()
        return tokenizer

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an HF ``tokenizer.json`` (loads in ``tokenizers.Tokenizer.from_file``)."""
        return atomic_write(path, self._hf_json())

    def save_gpt2_files(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write GPT-2 style ``vocab.json`` + ``merges.txt`` into ``directory``."""
        directory = make_dir(directory)
        return [atomic_write(directory / name, text) for name, text in self._gpt2_files().items()]

    def files(self) -> dict[str, str]:
        """What ``save_dir`` writes, by file name: ``tokenizer.json``, ``vocab.json`` and
        ``merges.txt``, for a caller that delivers them elsewhere than to a directory."""
        return {formats.TOKENIZER_JSON: self._hf_json(), **self._gpt2_files()}

    def _hf_json(self) -> str:
        return formats.hf_json(self.vocab, self.merges, self.added_tokens, self.pattern, self.direct, self.normalizer)

    def _gpt2_files(self) -> dict[str, str]:
        return {
            formats.VOCAB_JSON: formats.gpt2_vocab_json(self.vocab, self.special_tokens),
            formats.MERGES_TXT: formats.gpt2_merges_txt(self.merges),
        }

    def save_dir(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``tokenizer.json``, ``vocab.json`` and ``merges.txt`` into ``directory`` (made if need be)."""
        directory = make_dir(directory)
        return [atomic_write(directory / name, text) for name, text in self.files().items()]

    def export_tiktoken(self, path: str | os.PathLike[str]) -> Path:
        """Write tiktoken's ``.tiktoken`` ranks. Load them with ``tiktoken.load.load_tiktoken_bpe``
        and pass ``pat_str=self.pretokenizer.pattern, special_tokens=self.special_ids`` to
        ``tiktoken.Encoding``. ValueError when the ids do not follow merge order."""
        return atomic_write(path, formats.tiktoken_ranks(self.vocab, self.merges, self.special_tokens))

    # -- the merge loop -----------------------------------------------------------------

    def _bpe(self, piece: bytes, steps: list[EncodeStep] | None = None) -> list[int]:
        """Merge one pre-token by lowest rank first; record each round into ``steps``.

        This is the loop the encode view shows; plain encoding runs the same loop compiled
        (``engine/encode/_encoder_core.c``), without the record.

        ``ranks[i]`` is the rank of the pair ``(ids[i], ids[i+1])``; a merge changes only
        the two ranks beside it, and ``min`` plus ``index`` find the lowest, leftmost pair.
        """
        rank = self._rank_of.get
        merged = self._merged
        ids = list(map(self._byte_ids.__getitem__, piece))
        ranks = list(map(rank, zip(ids, ids[1:], strict=False), repeat(_NONE)))
        while True:
            best = min(ranks, default=_NONE)
            i = ranks.index(best) if best != _NONE else None
            if steps is not None:
                before, shown = list(ids), [None if r == _NONE else r for r in ranks]
            if i is not None:
                ids[i] = merged[best]
                del ids[i + 1], ranks[i]
                if i:
                    ranks[i - 1] = rank((ids[i - 1], ids[i]), _NONE)
                if i < len(ranks):
                    ranks[i] = rank((ids[i], ids[i + 1]), _NONE)
            if steps is not None:
                steps.append(EncodeStep(before, shown, i, list(ids)))
            if i is None:
                return ids

    def _encode_pretoken(self, pretoken: str) -> str:
        piece = pretoken.encode("utf-8")
        entry = self.encoder.get(piece) if self._direct else None
        if entry is None or entry in self._special_set:  # a special token is never made by merging
            return self._ranks.ids(piece)
        return chr(entry)

    def _encode_custom(self, piece: str) -> str:
        """The ids of one ordinary piece under a custom pattern, as code points: regex
        pre-tokens, each merged once and cached."""
        pretokens = self.pretokenizer.pretokens(piece)
        cache = self._pretokens
        wanted = set(pretokens)
        if len(cache) + len(wanted) > self.cache_size:
            cache.clear()  # bounded memory on endless streams
        for pretoken in wanted.difference(cache):
            cache[pretoken] = self._encode_pretoken(pretoken)
        return "".join(map(cache.__getitem__, pretokens))

    # -- public API -----------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        if (encoder := self._own_encoder()) is not None:
            return encoder.encode(text)
        if self._piece_encoder is None:
            self._piece_encoder = self._new_piece_encoder()
        if self._piece_encoder is not None:
            ids: list[int] = []
            for piece, token in self.pretokenizer.split_added(text):
                if token is not None:
                    ids.append(token.id)
                else:
                    ids += self._piece_encoder.encode(piece)
            return ids
        return _code_points(
            "".join(chr(token.id) if token else self._encode_custom(piece) for piece, token in self.pretokenizer.split_added(text))
        )

    def encode_batch(self, texts: Iterable[str], workers: int | None = None) -> list[list[int]]:
        """``[encode(text) for text in texts]``, in ``workers`` threads (see ``encode_stream``).
        A list or tuple in one thread is encoded in one call, the GIL released once: cutting
        it into units cost a tenth of encoding en-mix-6m's 15,555 documents; in more, its
        units are taken from both ends (``_units_from_both_ends``). One of less than
        ``THREADED_BYTES`` of UTF-8 is encoded in one thread, whatever ``workers`` says."""
        threads = self._threads_for(texts, workers)
        if threads == 1 and self._compiled and isinstance(texts, list | tuple):
            if (encoder := self._own_encoder()) is not None:
                return encoder.encode_many(texts)
        if (long := self._one_long_text(texts, threads)) is not None:
            return [self._long_ids(long, threads)]
        if threads > 1 and self._compiled and isinstance(texts, list | tuple):
            units = self._units_from_both_ends(texts, threads, lists=True)
            return list(chain.from_iterable(out if kind == _WHOLE else (out,) for out, kind in units if kind != _PART))
        return list(self.encode_stream(texts, workers))

    def encode_batch_flat(self, texts: Iterable[str], workers: int | None = None) -> FlatIds:
        """The ids of ``encode_batch`` in one buffer, with the offsets of each text's
        (``FlatIds``): no int put in a list, half the memory of lists (an id takes 4 bytes,
        not a pointer of 8), for a batch bound for NumPy or a file. Encoded as
        ``encode_batch`` encodes, in ``workers`` threads (a list or tuple in one thread in
        one call, in more from both ends), and the ids handed over from the encoder, not
        copied. The memory of the
        last large result freed (a quarter of a million ids up to 16 million) is kept for the
        next large one: memory new to the process is faulted in a page at a time."""
        threads = self._threads_for(texts, workers)
        if not self._compiled:
            return flat_ids(self.encode_batch(texts, workers))
        if threads == 1 and isinstance(texts, list | tuple):
            encoder = self._own_encoder()
            assert encoder is not None  # compiled
            parts: list[tuple[Buffer, bytes]] = [encoder.encode_ends(texts)]
        elif (long := self._one_long_text(texts, threads)) is not None:
            ids = self._long_ids(long, threads, packed=True)
            parts = [(ids, struct.pack("N", memoryview(ids).nbytes // 4))]
        elif isinstance(texts, list | tuple):
            parts = [_flat_part(out, kind) for out, kind in self._units_from_both_ends(texts, threads, lists=False)]
        else:
            found, threads = self._stream_units(texts, threads)
            units = (((unit, kind), kind) for unit, kind in found)
            parts = [_flat_part(out, kind) for out, kind in self._in_threads(units, threads, _ended_unit)]
        ids, offsets = self._joined_ends(parts, threads)
        if sys.byteorder == "little":
            return FlatIds(memoryview(ids), memoryview(offsets).cast("q"))
        native = array(UINT32)
        native.frombytes(ids)  # packed little-endian
        native.byteswap()
        return FlatIds(memoryview(native), memoryview(offsets).cast("q"))

    def encode_packed(self, text: str, dtype: str = "uint32") -> bytes:
        """``encode``'s ids as files of ids hold them: the bytes of a little-endian array of
        ``dtype`` (``"uint16"`` or ``"uint32"``); OverflowError if an id does not fit."""
        width = ID_WIDTHS[dtype]
        if (encoder := self._own_encoder()) is not None:
            return encoder.encode_packed(text, width)
        ids = array(_TYPECODES[width], self.encode(text))
        if sys.byteorder == "big":
            ids.byteswap()
        return ids.tobytes()

    def encode_stream(self, texts: Iterable[str], workers: int | None = None) -> Iterator[list[int]]:
        """``encode`` of each text, in order, as ``texts`` yields them, in ``workers`` threads
        (default: one per core).

        The compiled encoder releases the GIL, so threads run in parallel; each has an
        encoder of its own, kept for the next call, and all share the tokenizer's cache of
        pre-tokens' ids (what one thread merges, the others find, in this call and later
        ones). A thread takes texts in units of about ``UNIT_CHARS`` characters (a list's or
        tuple's in larger ones, by its size: ``_units``), encoded with the GIL released
        once for the unit, so many short texts cost little more than
        one long one; a text longer than ``2 * UNIT_CHARS`` is cut where no pre-token
        changes (``PreTokenizer.safe_cut``) and its pieces are encoded in parallel. At most
        two units per thread are in flight, and reading the texts (in this thread) overlaps
        with the encoding; this thread is one of the ``workers``, encoding units while it
        waits (``_in_threads``). The ids come back packed: a unit's with where each text
        ends, made lists here (``Vocab.lists``, filled without the GIL); a long text's
        pieces made one list by the threads together (``Vocab.fill``). The lists are left to reference counting, out of the
        cycle collector's walks (they hold only ints). Under a pattern that runs through
        ``regex`` the regex holds the GIL: the texts are encoded one after another. A
        stream of fewer than ``STREAM_THREADED_UNITS`` units is encoded in this thread alone.
        """
        threads = self.threads(workers)
        if not self._compiled:
            return map(self.encode, texts)
        found, threads = self._stream_units(texts, threads)
        units = (((unit, kind), kind) for unit, kind in found)
        if threads == 1:
            return _assembled(self._in_threads(units, 1, _listed_unit), partial(self._joined_ids, threads=1))
        # The threads hand their ids over packed and this thread makes the lists: lists made
        # in a worker thread come from memory of its own, new to the process (glibc gives each
        # thread an arena), and its page faults made many small texts slower in two threads.
        lists = partial(_apply, self._table.lists)
        return _assembled(self._in_threads(units, threads, _ended_unit), partial(self._joined_ids, threads=threads), lists)

    def encode_packed_stream(self, texts: Iterable[str], dtype: str = "uint32", workers: int | None = None) -> Iterator[bytes]:
        """``encode_packed`` of each text, as ``encode_stream`` does ``encode``: packing too
        runs in the threads."""
        width = ID_WIDTHS[dtype]
        threads = self.threads(workers)
        if not self._compiled:
            return (self.encode_packed(text, dtype) for text in texts)
        units, threads = self._stream_units(texts, threads)
        return _assembled(self._in_threads(units, threads, _packed_unit(width)), b"".join)

    def encode_packed_batches(
        self, batches: Iterable[tuple[Sequence[str], Sequence[bool]]], dtype: str, eot: int | None = None, workers: int | None = None
    ) -> Iterator[bytes]:
        """For each batch ``(texts, ends)``, in order: the ids of its texts packed as
        ``encode_packed`` does and joined, with ``eot`` after each text whose flag in ``ends``
        is true. Each batch is cut into units for ``workers`` threads (``_batch_units``); a
        dataset is written this way. One batch of less than ``THREADED_BYTES`` of UTF-8 is
        encoded in one thread."""
        width = ID_WIDTHS[dtype]
        threads = self.threads(workers)
        batches = iter(batches)
        head = list(islice(batches, 2))
        if threads > 1 and len(head) == 1 and not utf8_reaches(list(head[0][0]), THREADED_BYTES):
            threads = 1
        batches = chain(head, batches)
        if threads == 1:
            yield from (self._packed_batch(list(texts), list(ends), width, eot) for texts, ends in batches)
            return
        units = self._batch_units(batches, threads)
        run = _joined_unit(width, -1 if eot is None else eot)
        parts: list[bytes] = []
        for data, last in self._in_threads(units, threads, run):
            parts.append(data)
            if last:
                yield b"".join(parts)
                parts = []

    def encode_jsonl_blocks(
        self, blocks: Iterable[JsonlBlock], field: str, dtype: str, eot: int | None = None, workers: int | None = None
    ) -> Iterator[tuple[bytes, int, bool]]:
        """The ids of the documents of blocks of whole JSONL lines (each the string of its
        ``field``), in order, packed as ``encode_packed`` packs them, ``eot`` after each: a
        unit's ids at a time, with how many documents they end and whether the unit ends its
        block. The compiled encoder reads a line's text straight from its bytes
        (``Encoder.encode_jsonl``: no str made, decoded or encoded again); the lines it leaves,
        it hands to the block's reader of one line, which reads it as Python's ``json`` does
        (see ``JsonlBlock``). A unit is a block, or a piece of the text of a line longer than
        ``LONG_LINE`` (``_line_pieces``), which ``workers`` threads encode together and one
        encodes with no buffer the size of the line's ids: en-mix-6m's documents end with a
        line of 2.4 MB, whose text, ids and their copy were 1,700 pages new to a first call in
        one thread."""
        width = ID_WIDTHS[dtype]
        mark = -1 if eot is None else eot
        key = field.encode("utf-8")
        run = partial(_jsonl_unit, key, width, mark)
        if not self._compiled:  # each line read by the block's reader, its text encoded
            tail = b"" if eot is None else eot.to_bytes(width, "little")
            for block, offset, record in blocks:
                lines = block.split(b"\n")[: -1 if block.endswith(b"\n") else None]
                starts = accumulate((len(line) + 1 for line in lines), initial=offset)
                texts = (record(line, at) for line, at in zip(lines, starts, strict=False))
                ids = [self.encode_packed(text, dtype) + tail for text in texts if text is not None]
                yield b"".join(ids), len(ids), True
            return
        for (packed, documents), ends in self._in_threads(self._line_pieces(blocks, key), self.threads(workers), run):
            yield packed, documents, ends

    def _line_pieces(self, blocks: Iterable[JsonlBlock], field: bytes) -> Iterator[tuple[JsonlBlock | _LinePiece, bool]]:
        """The JSONL blocks as units, each with whether it ends its block: a block, but for
        one whose first line is longer than ``LONG_LINE`` and has a text the encoder reads,
        that text in pieces cut where a pre-token always starts (``text_pieces``), then the
        block's other lines. A line that long starts its block: it is longer than the blocks
        a JSONL file is read in (``LINE_BLOCK``), so the block before ends where the line
        before it does."""
        for block in blocks:
            data, offset, record = block
            newline = data.find(b"\n")
            end = len(data) if newline < 0 else newline + 1
            text = jsonl_field_utf8(memoryview(data)[:end], field) if end > LONG_LINE else None
            if text is None:
                yield block, True
                continue
            rest = end < len(data)
            for piece, last in text_pieces(text, self.pretokenizer, PIECE_CHARS):
                yield _LinePiece(piece, last), last and not rest
            if rest:
                yield (data[end:], offset + end, record), True

    def encode_text_blocks(
        self, blocks: Iterable[TextBlock], dtype: str, eot: int | None = None, workers: int | None = None
    ) -> Iterator[tuple[bytes, bool]]:
        """For each block of plain text, in order: its ids packed as ``encode_packed`` packs
        them, ``eot`` after a block that ends its file; and whether it does. The compiled
        encoder reads a block's UTF-8 itself (``Encoder.encode_utf8``: no str made, cut or
        made UTF-8 again, which took a third of a text file's time in one thread, and all of
        it in this one); a block that is not valid UTF-8 its reader decodes, as any block is
        under a pattern that runs through ``regex``. A block is a unit for ``workers``
        threads."""
        width = ID_WIDTHS[dtype]
        mark = -1 if eot is None else eot
        if self._compiled:
            run = partial(_text_unit, width, mark)
            yield from (out for out, _ in self._in_threads(zip(blocks, repeat(0)), self.threads(workers), run))
            return
        for data, offset, last, texts in blocks:
            ids = b"".join(self.encode_packed(text, dtype) for text in texts(data, offset))
            yield ids + (mark.to_bytes(width, "little") if last and mark >= 0 else b""), last

    def _packed_batch(self, texts: list[str], ends: list[bool], width: int, eot: int | None) -> bytes:
        """One batch of ``encode_packed_batches``, in this thread."""
        if (encoder := self._own_encoder()) is not None:
            return encoder.encode_packed_many(texts, width, -1 if eot is None else eot, ends)
        dtype = next(name for name, size in ID_WIDTHS.items() if size == width)
        tail = b"" if eot is None else eot.to_bytes(width, "little")
        return b"".join(self.encode_packed(text, dtype) + (tail if end else b"") for text, end in zip(texts, ends, strict=True))

    def _joined_ids(self, parts: list[bytes], threads: int) -> list[int]:
        """A long text's list of ids from its pieces' packed ids, filled by ``threads``
        threads (this one and helpers) at once, each a run of the pieces, without the GIL."""
        table = self._table
        sizes = [len(part) // 4 for part in parts]
        out = table.unfilled(sum(sizes))
        self._filled_in_runs(table.fill, out, parts, sizes, threads)
        table.filled(out)
        return out

    def _joined_ends(self, parts: list[tuple[Buffer, bytes]], threads: int) -> tuple[PackedIds, bytes]:
        """``join_ends(parts)``, the ids copied into memory new to the process by ``threads``
        threads (this one and helpers) at once, each a run of the parts, without the GIL:
        there its pages are faulted in, which one thread took 2.6-3.6 ms for en-mix-6m's
        documents, of a cold call of 24-26 ms (two: 1.2-1.9). Into the memory of the last
        result freed, kept (``kept_room``), one thread copies as fast as two (0.6 ms)."""
        sizes = [memoryview(ids).nbytes // 4 for ids, _ in parts]
        if threads == 1 or len(parts) < 2 or sum(sizes) < JOINED_APART or kept_room(sum(sizes)):
            return join_ends(parts)
        out = unfilled_ids(sum(sizes))
        self._filled_in_runs(fill_ids, out, [ids for ids, _ in parts], sizes, threads)
        return join_ends(parts, out)

    def _filled_in_runs(
        self, fill: Callable[[Out, int, list[Any]], None], out: Out, parts: list[Any], sizes: list[int], threads: int
    ) -> None:
        """``fill(out, at, run)`` of ``threads`` runs of the parts, of about as many ids each
        (``sizes``: each part's), the first in this thread, the rest in helpers, at once."""
        starts = list(accumulate(sizes, initial=0))
        cuts = [0, *(bisect_left(starts, starts[-1] * k // threads) for k in range(1, threads)), len(parts)]
        runs = [(starts[a], parts[a:b]) for a, b in pairwise(cuts) if b > a]
        helped = [self._pool(threads).submit(fill, out, at, run) for at, run in runs[1:]]
        try:
            if runs:
                fill(out, *runs[0])
        finally:
            wait(helped)  # no thread still filling out when it goes
        for future in helped:
            future.result()

    def _pool(self, threads: int) -> ThreadPoolExecutor:
        """The worker threads of calls in ``threads`` threads, kept between calls (starting
        three threads a call cost a twentieth of a warm encode of zh-xiyouji in two); they
        end when the tokenizer goes."""
        pool = self._pools.get(threads)
        if pool is None:  # this thread is the other one
            pool = self._pools[threads] = ThreadPoolExecutor(threads - 1, thread_name_prefix="bpe-tui-encode")
        return pool

    def threads(self, workers: int | None = None) -> int:
        """How many threads encode: ``workers`` (default one per core), but one when
        encoding is not compiled."""
        workers = workers or os.cpu_count() or 1
        return workers if workers > 1 and self._compiled else 1

    def _threads_for(self, texts: Iterable[str], workers: int | None) -> int:
        """How many threads encode ``texts``: ``threads(workers)``, but one for a list or
        tuple of less than ``THREADED_BYTES`` of UTF-8."""
        threads = self.threads(workers)
        if threads > 1 and isinstance(texts, (list, tuple)) and not utf8_reaches(texts, THREADED_BYTES):
            return 1
        return threads

    def _stream_units(self, texts: Iterable[str], threads: int) -> tuple[Iterator[tuple[Unit, int]], int]:
        """The units of ``texts`` (``_units``) and how many threads encode them: ``threads``,
        but one when there are fewer than ``STREAM_THREADED_UNITS`` (read ahead to tell;
        a long text already cut into pieces is encoded piece by piece as before)."""
        units = self._units(texts, threads)
        if threads == 1:
            return units, 1
        first = list(islice(units, STREAM_THREADED_UNITS))
        return chain(first, units), threads if len(first) == STREAM_THREADED_UNITS else 1

    def _pieces(self, text: str, threads: int) -> Iterator[tuple[int, int]]:
        """``text`` in pieces for ``threads`` threads, as ``(start, end)``, cut where no
        pre-token changes (a piece grows until it holds such a cut), near the ends
        ``_piece_ends`` gives: the pieces shrink toward the middle, where the threads that
        take them from both ends meet, so they finish together."""
        width = max(map(len, self.special_tokens), default=1)
        encoder = self._own_encoder()
        start = 0
        for end in _piece_ends(len(text), threads):
            if end <= start:
                continue
            cut = max(encoder.cut(text, start, end) - start, 0) if encoder is not None else 0
            for window in () if cut else (CUT_WINDOW, 4 * CUT_WINDOW, 16 * CUT_WINDOW):
                near = max(start, end - window)
                if any(token in text[max(start, near - width) : end + width] for token in self.special_tokens):
                    break
                if found := self.pretokenizer.safe_cut(text[near:end]):
                    cut = near - start + found
                    break
            while not cut and end < len(text) and not (cut := self.pretokenizer.safe_cut(text[start:end])):
                end += end - start
            if not cut:
                break
            yield start, start + cut
            start += cut
        yield start, len(text)

    def _borrowed(self, idle: list[Encoder], taken: list[Encoder]) -> Encoder:
        """An encoder for a helper thread: one that the last calls left in ``idle``, or a new
        one; put in ``taken``, to go back to ``idle`` when the call ends."""
        encoder: Encoder | None
        try:
            encoder = idle.pop()  # atomic: calls in other threads take others
        except IndexError:
            encoder = self._new_encoder()
        assert encoder is not None  # threads run only when encoding is compiled (threads())
        taken.append(encoder)
        return encoder

    def _one_long_text(self, texts: Iterable[str], threads: int) -> str | None:
        """The text of a batch that is one text long enough to cut for ``threads`` threads."""
        if threads > 1 and self._compiled and isinstance(texts, list | tuple) and len(texts) == 1 and len(texts[0]) > 2 * UNIT_CHARS:
            return texts[0]
        return None

    def _long_ids(self, text: str, threads: int, packed: bool = False) -> Any:
        """A long text's ids, encoded by ``threads`` threads (``_from_both_ends``): a list, or
        ``packed``, ids from ``unfilled_ids`` (the memory of the last large ids freed, when it
        has room). Each thread keeps its pieces' ids in its encoder (``Encoder.encode_into``),
        then puts them in the room of the whole itself (``Encoder.fill``), without the GIL.
        Made bytes a piece at a time instead, they were copied with the GIL held, into memory
        new to the process, and then once more to be joined."""
        counts: dict[int, int] = {}
        kept: dict[Encoder, list[tuple[int, int]]] = {}  # each encoder's pieces: (k, where its ids start)

        def encode(encoder: Encoder, k: int, piece: tuple[int, int], first: bool) -> None:
            mine = kept.setdefault(encoder, [])
            offset = mine[-1][1] + counts[mine[-1][0]] if mine else 0
            counts[k] = encoder.encode_into(text, *piece, first)
            mine.append((k, offset))

        def fill() -> None:
            starts = list(accumulate((counts[k] for k in range(len(counts))), initial=0))
            out = unfilled_ids(starts[-1]) if packed else self._table.unfilled(starts[-1])
            made.append(out)
            ours_first = sorted(kept.items(), key=lambda item: item[0] is not self._encoder)  # this thread fills its own
            jobs = [(encoder, [(starts[k], offset, counts[k]) for k, offset in mine]) for encoder, mine in ours_first]
            helped = [self._pool(threads).submit(encoder.fill, out, spans) for encoder, spans in jobs[1:]]
            try:
                jobs[0][0].fill(out, jobs[0][1])
            finally:
                wait(helped)  # no thread still filling out when it goes
            for future in helped:
                future.result()

        made: list[Any] = []
        self._from_both_ends(self._pieces(text, threads), threads, encode, fill)
        if not packed:
            self._table.filled(made[0])
        return made[0]

    def _units_from_both_ends(self, texts: list[str] | tuple[str, ...], threads: int, lists: bool) -> list[tuple[Any, int]]:
        """``(_ended_unit(encoder, unit), kind)`` of each of the texts' units (``_units``), in
        order, encoded by ``threads`` threads from both ends (``_from_both_ends``): each
        thread meets, call after call, the same units, whose pre-tokens its encoder's hot
        table holds (handed to whichever thread was free, a unit went to the other thread in
        the next call about half the time, and took a third longer). With ``lists``, a
        whole unit's result is its texts' lists (``Vocab.lists``) and a long text's last
        piece's its list (``_joined_ids``, the pieces' left None), made in this thread: after
        each unit it encodes, of those done so far (lists made in a helper thread come from
        memory of its own, new to the process), and of the rest at the end; but a helper
        makes those of a unit it ends once no unit is left to take, rather than wait while
        this thread makes them (the lists of a unit of en-mix-6m's documents took 0.4 ms
        after the last unit's end)."""
        units: list[tuple[Unit, int]] = []
        outs: list[Any] = []
        encoded: list[bool] = []
        made: list[bool] = []  # or being made
        firsts: dict[int, int] = {}  # a long text's last piece: its first
        begun: list[int] = []  # the units taken, in the order they were
        all_found: list[bool] = []  # [True] once all are
        claiming = threading.Lock()

        def found() -> Iterator[tuple[Unit, int]]:
            """The units, each with its place in the lists above, kept as it is found."""
            first = 0
            for unit in self._units(texts, threads):
                k = len(units)
                if unit[1] == _LAST:
                    firsts[k] = first
                first = k + 1 if unit[1] != _PART else first
                units.append(unit)
                outs.append(None)
                encoded.append(False)
                made.append(not lists)
                yield unit
            all_found.append(True)

        own = self._own_encoder()
        front = 0  # the units before it are made

        def make(k: int, threads: int) -> None:
            """Unit k's lists, once it and, ending a long text, its pieces are done."""
            kind = units[k][1]
            with claiming:  # by one thread: the lists' filling lets the GIL go
                if made[k] or kind == _PART or not all(encoded[firsts.get(k, k) : k + 1]):
                    return
                made[k] = True
            if kind == _WHOLE:
                outs[k] = self._table.lists(*outs[k])
            else:
                outs[k] = self._joined_ids(outs[firsts[k] : k + 1], threads)
                outs[firsts[k] : k] = [None] * (k - firsts[k])

        def encode(encoder: Encoder, k: int, unit: tuple[Unit, int], first: bool) -> None:
            nonlocal front
            begun.append(k)
            outs[k] = _ended_unit(encoder, unit)
            encoded[k] = True
            if encoder is not own and not (all_found and len(begun) == len(units)):
                return  # its lists made in this thread, the helper taking the next unit
            for j in [k, *(j for j in firsts if firsts[j] <= k < j)]:
                make(j, 1)  # the other threads are busy
            while encoder is own and front < len(units) and encoded[front]:
                make(front, 1)
                front += 1

        self._from_both_ends(found(), threads, encode)
        for k in range(len(units)):
            make(k, threads)
        return [(out, kind) for out, (_, kind) in zip(outs, units, strict=True)]

    def _from_both_ends(
        self, items: Iterable[T], threads: int, encode: Callable[[Encoder, int, T, bool], None], then: Callable[[], None] | None = None
    ) -> None:
        """``encode(encoder, k, item, first)`` of each item, the k-th of ``items`` (a long
        text's pieces, or a list's units), in ``threads`` threads: the helpers take items
        from the start, this thread from the end, until none is left (``first``: the
        encoder's first item in this call). Each thread so meets, call after call, much the
        same part of a text encoded again, whose pre-tokens its encoder's hot table holds;
        items handed to whichever thread was free went to either from one call to the next.
        The items are found here while the helpers encode the first ones: finding en-mix-6m's
        pieces or units took 0.2-0.5 ms, which the helpers waited when they were found
        first. ``then()`` runs once all are encoded, before the helpers' encoders are given
        back. One item is encoded in this thread alone."""
        own = self._own_encoder()
        assert own is not None  # compiled
        self._cache()  # made here, not by two threads at once
        found = enumerate(items)
        pending = deque(islice(found, 2))
        if len(pending) < 2 or threads < 2:  # no thread started for one
            for k, item in chain(pending, found):
                encode(own, k, item, k == 0)
            if then is not None:
                then()
            return
        idle, taken = self._idle, list[Encoder]()
        started, all_found = threading.Event(), threading.Event()

        def take(encoder: Encoder, pop: Callable[[], tuple[int, T]]) -> None:
            first = True
            while True:
                try:
                    k, item = pop()  # atomic: the other end's thread takes others
                except IndexError:
                    if all_found.is_set():
                        return
                    all_found.wait()
                    continue
                if first:
                    started.set()
                encode(encoder, k, item, first)
                first = False

        helped = [self._pool(threads).submit(lambda: take(self._borrowed(idle, taken), pending.popleft)) for _ in range(threads - 1)]
        for future in helped:
            future.add_done_callback(lambda _: started.set())  # nor is it waited for if a helper failed first
        try:
            try:
                # The GIL let go until a helper has its first item: this thread, finding the
                # rest, would hold it until a switch interval (5 ms) had passed.
                started.wait()
                pending.extend(found)
                all_found.set()
                take(own, pending.pop)
            finally:
                all_found.set()
                pending.clear()  # on an error here, the helpers stop after the item they hold
                wait(helped)
            for future in helped:
                future.result()
            if then is not None:
                then()
        finally:
            idle += taken

    def _units(self, texts: Iterable[str], threads: int) -> Iterator[tuple[Unit, int]]:
        """Texts in units for ``threads`` threads, each with how its results make the
        stream's: ``_WHOLE`` (a list of texts, one result a text), ``_PART`` (a piece of a long
        text, ``(text, start, end)``: it is encoded where it lies, not sliced out, which cost
        two threads a tenth of their speed on a long English text; more follow),
        ``_LAST`` (the long text's last piece). Long texts are cut only for more than one
        thread (the threads share them). A unit holds about ``UNIT_CHARS`` characters; a
        list's or tuple's in threads about a ``UNITS_A_THREAD``-th of each thread's share of
        its characters, up to ``MAX_UNIT_CHARS``, its units found in one pass in C
        (``unit_ends``); other iterables' text by text, as they come."""
        long_chars = 2 * UNIT_CHARS if threads > 1 else sys.maxsize
        most = MAX_UNIT_CHARS if threads > 1 else UNIT_CHARS
        if (
            isinstance(texts, list | tuple)
            and (ends := unit_ends(texts, UNIT_CHARS, most, threads * UNITS_A_THREAD, _TEXT_CHARS, long_chars)) is not None
        ):
            start = 0
            for end in ends:
                if end - start == 1 and len(texts[start]) > long_chars:
                    yield from self._long_units(texts[start], threads)
                else:
                    yield list(texts[start:end]), _WHOLE
                start = end
            return
        unit: list[str] = []
        size = 0
        for text in texts:
            if len(text) > long_chars:
                if unit:
                    yield unit, _WHOLE
                    unit, size = [], 0
                yield from self._long_units(text, threads)
                continue
            unit.append(text)
            size += len(text) + _TEXT_CHARS
            if size >= UNIT_CHARS:
                yield unit, _WHOLE
                unit, size = [], 0
        if unit:
            yield unit, _WHOLE

    def _long_units(self, text: str, threads: int) -> Iterator[tuple[Unit, int]]:
        """A long text's pieces as units: ``_PART`` each but the last, ``_LAST``."""
        pieces = self._pieces(text, threads)
        piece = next(pieces)
        for following in pieces:
            yield (text, *piece), _PART
            piece = following
        yield (text, *piece), _LAST

    def _batch_units(
        self, batches: Iterable[tuple[Sequence[str], Sequence[bool]]], threads: int
    ) -> Iterator[tuple[tuple[list[str], list[bool]], bool]]:
        """The batches of ``encode_packed_batches`` in units ``(texts, ends)`` for ``threads``
        threads, each with whether it ends its batch: a batch's texts found in units in C, as
        a list's are (``unit_ends``; taken a text at a time in Python, they kept this thread
        from encoding, and two threads on en-mix-6m's documents got 1.07x one); a long text
        alone in a unit is cut into pieces, the flag of its end going with its last."""
        long_chars = 2 * UNIT_CHARS
        for batch, marks in batches:
            texts, ends = list(batch), list(marks)
            cuts = unit_ends(texts, UNIT_CHARS, MAX_UNIT_CHARS, threads * UNITS_A_THREAD, _TEXT_CHARS, long_chars) if texts else []
            if cuts is None:  # an item that is no str: the encoder says so
                cuts = [len(texts)]
            start = 0
            for k, end in enumerate(cuts):
                last = k == len(cuts) - 1
                if end - start == 1 and len(texts[start]) > long_chars:
                    text, spans = texts[start], list(self._pieces(texts[start], threads))
                    for j, (a, b) in enumerate(spans):
                        final = j == len(spans) - 1
                        yield ([text[a:b]], [ends[start] and final]), last and final
                else:
                    yield (texts[start:end], ends[start:end]), last
                start = end
            if not cuts:
                yield ([], []), True

    def _in_threads(self, units: Iterable[tuple[U, K]], threads: int, run: Callable[[Encoder, U], R]) -> Iterator[tuple[R, K]]:
        """``(run(encoder, unit), kind)`` of each unit, in order, computed in ``threads``
        threads: this one and ``threads - 1`` helpers, each with an ``Encoder`` of its own
        (the helpers' taken from those the last calls left, given back after) over the
        tokenizer's cache; at most two units a thread in flight. This thread, waiting for
        a unit a helper is encoding, encodes the next one no helper has started (a third
        thread beside two helpers would leave two cores to three). One thread, or one unit
        in all (starting threads would cost more than it saves): this one alone."""
        units = iter(units)
        first = list(islice(units, 2))
        own = self._own_encoder()
        assert own is not None  # called only when encoding is compiled
        if threads == 1 or len(first) < 2:
            yield from ((run(own, unit), kind) for unit, kind in chain(first, units))
            return
        units = chain(first, units)
        self._cache()  # made here, not by two threads at once
        local = threading.local()
        idle, taken = self._idle, list[Encoder]()  # idle: replaced when direct changes, so no stale encoder returns

        def work(unit: U) -> R:
            encoder: Encoder | None = getattr(local, "encoder", None)
            if encoder is None:
                encoder = local.encoder = self._borrowed(idle, taken)
            return run(encoder, unit)

        pool = self._pool(threads)
        pending: deque[_Pending[U, K, R]] = deque()

        def mine(item: _Pending[U, K, R]) -> bool:
            """Whether this thread took the item's unit from the helpers (none had started
            it), and encoded it."""
            if not item.future.cancel():  # a helper has it, or it is done
                return False
            done: Future[R] = Future()
            try:
                done.set_result(run(own, item.unit))
            except Exception as e:  # raised in its turn: a unit before it may fail first
                done.set_exception(e)
            item.future = done  # the cancelled future stood until now
            return True

        def oldest() -> tuple[R, K]:
            """The oldest unit's result: while a helper encodes it, this thread encodes the
            next unit no helper has started."""
            head = pending[0]
            while head.future.running() and any(mine(item) for item in islice(pending, 1, None) if not item.future.done()):
                pass
            mine(head)
            pending.popleft()
            return head.future.result(), head.kind

        try:
            for unit, kind in units:
                pending.append(_Pending(pool.submit(work, unit), unit, kind))
                if len(pending) >= 2 * threads:
                    yield oldest()
            while pending:
                yield oldest()
        finally:
            for item in pending:
                item.future.cancel()
            wait([item.future for item in pending])  # then no encoder taken is in use
            idle += taken

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily encode a stream of strings; the ids equal ``encode`` of their concatenation.

        Text is encoded up to the last cut that more input cannot change
        (``PreTokenizer.safe_cut``); the rest waits for the next string.
        """
        pretok = self.pretokenizer
        buffer = ""
        for text in iterable:
            buffer += text
            cut = pretok.safe_cut(buffer)
            if cut:
                yield from self.encode(buffer[:cut])
                buffer = buffer[cut:]
        if buffer:
            yield from self.encode(buffer)

    def encode_steps(self, text: str) -> list[PreTokenTrace]:
        """Every pre-token of ``text`` with each round of its merge loop (see ``EncodeStep``)."""
        traces = []
        for piece, token in self.pretokenizer.split_added(text):
            if token:
                traces.append(PreTokenTrace(piece, True, [], [token.id]))
                continue
            for pretoken in self.pretokenizer.pretokens(piece):
                steps: list[EncodeStep] = []
                ids = self._bpe(pretoken.encode("utf-8"), steps)
                traces.append(PreTokenTrace(pretoken, False, steps, ids))
        return traces

    def token(self, i: int) -> bytes:
        """The bytes of token ``i`` (``vocab[i]``); ``TokenIdError`` names an id that is none."""
        return self.vocab[as_id(i, self.max_id, self.vocab)]

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes of ``ids`` joined; ``TokenIdError`` names the first bad id and where it is."""
        return joined(self._table.decode_bytes, ids, self.max_id, self.vocab)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; invalid UTF-8 (a token may hold half a character) becomes U+FFFD.
        ``TokenIdError`` names the first bad id and where it is."""
        return joined(self._table.decode, ids, self.max_id, self.vocab)


def _piece(encoder: Encoder, unit: Unit, width: int) -> bytes:
    """The ids of a piece of a long text, packed."""
    assert isinstance(unit, tuple)
    text, start, end = unit
    return encoder.encode_packed(text, width, start, end)


def _packed_unit(width: int) -> Callable[[Encoder, Unit], list[bytes] | bytes]:
    def run(encoder: Encoder, unit: Unit) -> list[bytes] | bytes:
        return encoder.encode_many(unit, width) if isinstance(unit, list) else _piece(encoder, unit, width)

    return run


def _listed_unit(encoder: Encoder, unit: tuple[Unit, int]) -> list[list[int]] | bytes:
    """A unit of ``encode_stream`` in one thread: whole texts' lists, or a piece of a long
    text packed."""
    texts = unit[0]
    return encoder.encode_many(texts) if isinstance(texts, list) else _piece(encoder, texts, 4)


def _ended_unit(encoder: Encoder, unit: tuple[Unit, int]) -> tuple[PackedIds, bytes] | bytes:
    """A unit of ``encode_stream`` in a worker thread: whole texts' ids packed with their
    ends, or a piece of a long text packed."""
    texts = unit[0]
    return encoder.encode_ends(texts) if isinstance(texts, list) else _piece(encoder, texts, 4)


def _flat_part(out: tuple[PackedIds, bytes] | bytes, kind: int) -> tuple[Buffer, bytes]:
    """An ``_ended_unit``'s ids as a part for ``join_ends``: a piece of a long text ends no
    text, but for its last, which ends the text."""
    if isinstance(out, tuple):
        return out
    return out, struct.pack("N", len(out) // 4) if kind == _LAST else b""


def _jsonl_unit(field: bytes, width: int, eot: int, encoder: Encoder, unit: JsonlBlock | _LinePiece) -> tuple[bytes, int]:
    """A unit of ``encode_jsonl_blocks``, and the documents it ends: a block's lines, those the
    encoder reads, and between them those it leaves, read by the block's reader and encoded
    as texts; or a piece of a long line's text, ``eot`` after the last."""
    if isinstance(unit, _LinePiece):
        ids = encoder.encode_utf8(unit.data, width, eot if unit.last else -1)
        assert ids is not None  # the encoder read it from the line as UTF-8
        return ids, int(unit.last)
    block, offset, record = unit
    parts: list[bytes] = []
    at = documents = 0
    while at < len(block):
        ids, at, _, done = encoder.encode_jsonl(block, at, field, width, eot)
        parts.append(ids)
        documents += done
        if at == len(block):
            break
        end = block.find(b"\n", at)
        end = len(block) if end < 0 else end
        text = record(block[at:end], offset + at)
        at = end + 1
        if text is not None:
            parts.append(encoder.encode_packed_many([text], width, eot))
            documents += 1
    return b"".join(parts), documents


def _text_unit(width: int, eot: int, encoder: Encoder, unit: TextBlock) -> tuple[bytes, bool]:
    """A block of ``encode_text_blocks``: its UTF-8 encoded as it is, or, where it is not
    valid UTF-8, its texts as its reader decodes them."""
    data, offset, last, texts = unit
    mark = eot if last else -1
    ids = encoder.encode_utf8(data, width, mark)
    if ids is None:
        pieces = texts(data, offset) or [""]
        ids = encoder.encode_packed_many(pieces, width, mark, [False] * (len(pieces) - 1) + [True])
    return ids, last


def _apply(f: Callable[..., R], args: tuple[Any, ...]) -> R:
    return f(*args)


def _joined_unit(width: int, eot: int) -> Callable[[Encoder, tuple[list[str], list[bool]]], bytes]:
    def run(encoder: Encoder, unit: tuple[list[str], list[bool]]) -> bytes:
        return encoder.encode_packed_many(unit[0], width, eot, unit[1])

    return run


def _assembled(
    results: Iterable[tuple[Any, int]], made: Callable[[list[bytes]], W], whole: Callable[[Any], Iterable[W]] = iter
) -> Iterator[W]:
    """The stream's results from the units': ``whole`` of a ``_WHOLE`` unit's (its results),
    and for a long text ``made`` of its pieces' packed ids."""
    parts: list[bytes] = []
    for out, kind in results:
        if kind == _WHOLE:
            yield from whole(out)
            continue
        parts.append(out)
        if kind == _LAST:
            yield made(parts)
            parts = []


def _unpickle(settings: tuple[Any, ...], direct: bool) -> Tokenizer:
    vocab, merges, special_tokens, pattern, cache_size, normalizer = settings
    tokenizer = Tokenizer(vocab, merges, special_tokens, pattern, cache_size, normalizer)
    tokenizer.direct = direct
    return tokenizer


if TYPE_CHECKING:
    AnyTokenizer = Tokenizer | WordPieceTokenizer | UnigramTokenizer | SentencePieceModel
    """What ``Tokenizer.load`` opens."""


def model_kind(tokenizer: AnyTokenizer) -> str:
    """What kind of model ``tokenizer`` is, as a sentence names it: ``byte-level BPE``,
    ``WordPiece``, ``Unigram``, ``SentencePiece Unigram``..."""
    from engine.encode.sentencepiece_model import SentencePieceModel
    from engine.encode.unigram import UnigramTokenizer

    if isinstance(tokenizer, Tokenizer):
        return "byte-level BPE"
    if isinstance(tokenizer, SentencePieceModel):
        return f"SentencePiece {tokenizer.kind}"
    return "Unigram" if isinstance(tokenizer, UnigramTokenizer) else "WordPiece"
