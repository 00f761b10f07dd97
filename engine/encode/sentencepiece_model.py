"""SentencePiece's own ``.model`` files, encoded by the ``sentencepiece`` package itself.

A ``.model`` is a ``ModelProto`` (protobuf): the pieces with their scores and types, the
trainer's settings (the model type, Unigram or BPE, word or char; ``byte_fallback``...) and
the normalizer, whose rules are compiled into a character map (NFKC by default). Encoding as
SentencePiece does means running that map and the model exactly as its C++ does, so the file
is handed to ``sentencepiece`` (optional: ``pip install 'bpe-tui[sentencepiece]'``),
imported only when a ``.model`` is opened: the ids are its own ``encode(text)``'s, the text
its ``decode(ids)``.

What the rows and views need beside the ids is read here, from the protobuf wire format
(a few lines, without the ``protobuf`` package): the model type and each piece's type, and
the byte span of each piece of an encode (its ``begin`` and ``end`` in the text).

- special tokens: the unknown piece (``<unk>``), the control symbols (``<s>``, ``</s>`` and
  any ``control_symbols``: never produced from text, dropped when decoding) and the
  user-defined symbols (matched whole in the text before anything else);
- ``byte_fallback``: a character no piece covers is its UTF-8 bytes, pieces ``<0xE4>``...;
  each gets one byte of the span here (SentencePiece gives the whole character to the last).

A file that is not a ``ModelProto`` (truncated, corrupt, empty) is refused in one line
naming it, before ``sentencepiece`` is asked.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from engine.encode.flat import FlatBatches
from engine.encode.token_ids import TokenTexts, as_id
from engine.errors import ModelFileError, SettingsError, unreadable
from engine.formats.tokenizer_files import TOKENIZER_JSON

INSTALL = "pip install 'bpe-tui[sentencepiece]'"
SUFFIX = ".model"
MODEL_TYPES = {1: "Unigram", 2: "BPE", 3: "word", 4: "char"}
"""``TrainerSpec.model_type``: what the model is, by its number."""
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
"""``ModelProto.SentencePiece.Type``: what a piece is."""
SPECIAL_TYPES = (UNKNOWN, CONTROL, USER_DEFINED)


class PieceSpan(NamedTuple):
    """A piece of an encode: its id and the UTF-8 bytes ``start:end`` of the text it covers."""

    id: int
    start: int
    end: int


class _Broken(Exception):
    """The protobuf ends inside a field, or has a field no protobuf can have."""


# -- the protobuf wire format -------------------------------------------------------------


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(data) and shift < 70:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
    raise _Broken


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` of each field of a message: an int for a varint, bytes for
    the rest (a string, a nested message, a fixed 32 or 64 bits)."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, at = _varint(data, at)
        elif wire in (1, 2, 5):
            size = {1: 8, 5: 4}.get(wire)
            if size is None:
                size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
            if at > len(data):
                raise _Broken
        else:
            raise _Broken
        if number == 0:
            raise _Broken
        yield number, value


def _int(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise _Broken
    return value


def _bytes(value: int | bytes) -> bytes:
    if isinstance(value, int):
        raise _Broken
    return value


class ModelInfo(NamedTuple):
    """What a ``.model`` says beside what ``sentencepiece`` encodes with."""

    model_type: int
    types: list[int]
    """Each piece's type, by id."""
    scores: list[float]
    normalizer: str
    """The normalizer's name (``nmt_nfkc``, ``identity``...; empty for custom rules)."""


def read_model_info(data: bytes) -> ModelInfo:
    """The model type and each piece's type from a ``ModelProto``; ``_Broken`` when it is none."""
    types: list[int] = []
    scores: list[float] = []
    model_type = 1
    normalizer: str | None = None
    trainer = False
    for number, value in _fields(data):
        if number == 1:  # a piece: 1 its text, 2 its score, 3 its type
            kind, score = NORMAL, 0.0
            for field, part in _fields(_bytes(value)):
                if field == 2:
                    score = struct.unpack("<f", _bytes(part))[0] if len(_bytes(part)) == 4 else 0.0
                elif field == 3:
                    kind = _int(part)
            types.append(kind)
            scores.append(score)
        elif number == 2:  # trainer_spec: 3 the model type
            trainer = True
            for field, part in _fields(_bytes(value)):
                if field == 3:
                    model_type = _int(part)
        elif number == 3:  # normalizer_spec: 1 its name
            normalizer = ""
            for field, part in _fields(_bytes(value)):
                if field == 1:
                    normalizer = _bytes(part).decode("utf-8", "replace")
    if not types or not trainer or normalizer is None:
        raise _Broken
    return ModelInfo(model_type, types, scores, normalizer)


def _piece_spans(data: bytes) -> Iterator[PieceSpan]:
    """The pieces of an encode, from a ``SentencePieceText``: 2 a piece (2 its id, 4 its
    begin, 5 its end, bytes of the text)."""
    for number, value in _fields(data):
        if number == 2:
            got = {field: _int(part) for field, part in _fields(_bytes(value)) if field in (2, 4, 5)}
            yield PieceSpan(got.get(2, 0), got.get(4, 0), got.get(5, 0))


# -- finding and opening ------------------------------------------------------------------


def model_file(path: str | os.PathLike[str]) -> Path | None:
    """The SentencePiece model ``path`` names: a ``.model`` file, or the one ``.model`` in a
    directory that holds no ``tokenizer.json`` (None: ``path`` is not one)."""
    path = Path(path)
    if path.suffix == SUFFIX and not path.is_dir():
        return path
    if path.is_dir() and not (path / TOKENIZER_JSON).exists():
        found = sorted(p for p in path.glob(f"*{SUFFIX}") if p.is_file())
        if len(found) == 1:
            return found[0]
    return None


def _processor(path: Path, data: bytes) -> Any:
    try:
        import sentencepiece
    except ImportError:
        raise SettingsError(f"{path}: a SentencePiece model opens through the sentencepiece package: {INSTALL}") from None
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(data)
    except (RuntimeError, OSError, ValueError) as e:
        raise ModelFileError(f"{path}: sentencepiece cannot open it: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    return processor


class SentencePieceModel(FlatBatches):
    """A SentencePiece ``.model``, encoding and decoding through ``sentencepiece``: ``vocab``
    (id -> piece), ``kind`` (``Unigram``, ``BPE``, ``word`` or ``char``), the special tokens
    (unknown, control and user-defined pieces) and ``special_ids``."""

    def __init__(self, processor: Any, info: ModelInfo, path: Path) -> None:
        self._processor = processor
        self.path = path
        self.kind = MODEL_TYPES.get(info.model_type, f"model type {info.model_type}")
        size = processor.get_piece_size()
        if size != len(info.types):
            raise ModelFileError(f"{path}: holds {len(info.types):,} pieces, of which sentencepiece reads {size:,}")
        self.vocab: list[str] = [processor.id_to_piece(i) for i in range(size)]
        self.types = info.types
        self.scores = info.scores
        self.normalizer = info.normalizer
        self.unk_id: int = processor.unk_id()
        self.special_ids = {self.vocab[i]: i for i, kind in enumerate(info.types) if kind in SPECIAL_TYPES}
        self.special_tokens = list(self.special_ids)
        self.byte_fallback = BYTE in info.types

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SentencePieceModel:
        """Open a ``.model``: ``ModelFileError`` when it cannot be read or is no model,
        ``SettingsError`` when ``sentencepiece`` is not installed."""
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ModelFileError(unreadable(path, e)) from None
        try:
            info = read_model_info(data)
        except _Broken:
            raise ModelFileError(
                f"{path}: not a SentencePiece model (no complete ModelProto with pieces and settings: truncated or corrupt?)"
            ) from None
        return cls(_processor(path, data), info, path)

    def token(self, i: int) -> str:
        """The piece of id ``i``; ``TokenIdError`` names an id that is none."""
        return self.vocab[as_id(i, len(self.vocab) - 1)]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``: ``sentencepiece``'s ``encode(text)``."""
        ids: list[int] = self._processor.encode(text)
        return ids

    def encode_batch(self, texts: Iterable[str], workers: int | None = None) -> list[list[int]]:
        """``[encode(text) for text in texts]``, on ``sentencepiece``'s threads."""
        ids: list[list[int]] = self._processor.encode(list(texts), num_threads=workers or -1)
        return ids

    def encode_spans(self, text: str) -> list[PieceSpan]:
        """Each piece of ``encode(text)`` with the UTF-8 bytes of ``text`` it covers: a piece's
        ``▁`` covers the space it stands for (none where SentencePiece adds it before the
        text), and each byte piece of a character one byte of it."""
        spans = list(_piece_spans(self._processor.encode(text, out_type="serialized_proto")))
        out: list[PieceSpan] = []
        k = 0
        while k < len(spans):
            end = k
            while end < len(spans) and self.types[spans[end].id] == BYTE:
                end += 1
            if end == k:
                out.append(spans[k])
                k += 1
                continue
            run = spans[k:end]  # byte pieces: one byte each, where they add up to their span
            start, stop = run[0].start, max(s.end for s in run)
            if stop - start == len(run):
                out.extend(PieceSpan(s.id, start + n, start + n + 1) for n, s in enumerate(run))
            else:
                out.extend(run)
            k = end
        return out

    def normalize(self, text: str) -> str:
        """``text`` as the model reads it: its normalizer's rules, ``▁`` for each space, and
        one before the text where the model adds it."""
        normalized: str = self._processor.normalize(text)
        return normalized

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``: ``sentencepiece``'s ``decode(ids)`` (control pieces give
        nothing). ``TokenIdError`` names the first bad id and where it is."""
        text: str = self._processor.decode(self._id_checks.checked(ids))
        return text

    @cached_property
    def _id_checks(self) -> TokenTexts:
        """Every id with an empty text: joining them in C checks ids before ``sentencepiece``
        decodes them."""
        return TokenTexts([""] * len(self.vocab), [""] * len(self.vocab))

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """``decode(ids)`` as UTF-8."""
        return self.decode(ids).encode("utf-8")
