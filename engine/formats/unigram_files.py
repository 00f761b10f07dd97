"""Unigram models on file: Hugging Face's ``tokenizer.json`` with a ``Unigram`` model.

Written as ``tokenizers``' own ``SentencePieceUnigramTokenizer`` lays one out, with
SentencePiece's identity normalization in place of its NFKC: the model's ``vocab`` is a list
of ``[piece, log-probability]`` in id order with ``unk_id``; the normalizer makes a run of
spaces one (``Replace`` of ``" {2,}"``, as SentencePiece's ``remove_extra_whitespaces``
does, so that a text encodes as the trainer saw it); the pre-tokenizer and the decoder are
``Metaspace`` (``▁`` for a space and before each piece of text, ``prepend_scheme``
``always``, cut before each ``▁``); ``<unk>`` is an added token, special. HF opens it
(``tokenizers.Tokenizer.from_file``) and encodes as ``UnigramTokenizer`` does.

Read back: such a file, with or without the normalizer (a file with ``normalizer: null``
encodes spaces one by one) or the decoder; ``byte_fallback`` must be off. Anything else is
refused in one line naming the file and what is unsupported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.corpus.stages import AddedToken
from engine.errors import ModelFileError
from engine.formats.atomic import Pathish
from engine.formats.tokenizer_files import TOKENIZER_JSON, _flatten, _hf_added_tokens, _load_json

REPLACEMENT = "\u2581"
SPACES = " {2,}"
"""The runs of spaces the normalizer makes one space."""
_COLLAPSE = {"type": "Replace", "pattern": {"Regex": SPACES}, "content": " "}


@dataclass(frozen=True, slots=True)
class UnigramData:
    """What a Unigram file holds, in the terms of ``UnigramTokenizer(...)``."""

    vocab: list[tuple[str, float]]
    """Id -> (piece, log-probability), added tokens included."""
    unk_id: int
    added_tokens: list[AddedToken]
    collapse_spaces: bool
    """Whether the normalizer makes each run of spaces one."""
    decoder: bool
    """Whether the file has the ``Metaspace`` decoder (None: HF joins the tokens with spaces)."""
    path: Path


def unigram_json(vocab: Sequence[tuple[str, float]], unk_id: int, added_tokens: Sequence[AddedToken], collapse_spaces: bool = True) -> str:
    """The text of an HF ``tokenizer.json`` for a Unigram model; ``vocab`` in id order."""
    metaspace = {"type": "Metaspace", "replacement": REPLACEMENT, "prepend_scheme": "always", "split": True}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": t.id,
                "content": t.content,
                "single_word": t.single_word,
                "lstrip": t.lstrip,
                "rstrip": t.rstrip,
                "normalized": t.normalized,
                "special": t.special,
            }
            for t in sorted(added_tokens, key=lambda t: t.id)
        ],
        "normalizer": dict(_COLLAPSE) if collapse_spaces else None,
        "pre_tokenizer": metaspace,
        "post_processor": None,
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": unk_id, "vocab": [[piece, score] for piece, score in vocab], "byte_fallback": False},
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


# -- reading ------------------------------------------------------------------------------


def is_unigram(path: Pathish) -> bool:
    """Whether ``path`` is a ``tokenizer.json`` whose model is Unigram, or a directory holding
    one. A file that cannot be read is not: the reader it goes to says why."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_JSON
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if b'"Unigram"' not in data:
        return False
    try:
        doc = json.loads(data)
    except ValueError:
        return True  # broken, and Unigram by its text: its reader says where it breaks
    return isinstance(doc, dict) and isinstance(doc.get("model"), dict) and doc["model"].get("type") == "Unigram"


def read_unigram(path: Pathish) -> UnigramData:
    """Read a Unigram ``tokenizer.json``, or the one in a directory."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_JSON
    doc = _load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise ModelFileError(f"{path}: not a tokenizer.json (no 'model' section)")
    model = doc["model"]
    if model.get("type") != "Unigram":
        raise ModelFileError(f"{path}: model type is {model.get('type')!r}, not Unigram")
    if model.get("byte_fallback"):
        raise ModelFileError(f"{path}: byte_fallback is not supported")
    vocab = _parse_vocab(path, model.get("vocab"))
    unk_id = model.get("unk_id")
    if not isinstance(unk_id, int) or isinstance(unk_id, bool) or not 0 <= unk_id < len(vocab):
        raise ModelFileError(f"{path}: 'model.unk_id' is {unk_id!r}, not the id of a piece (what an unknown character becomes)")
    collapse = _normalizer(path, doc.get("normalizer"))
    _metaspace(path, doc.get("pre_tokenizer"), "pre_tokenizer")
    decoder = doc.get("decoder") is not None
    if decoder:
        _metaspace(path, doc["decoder"], "decoder")
    added = _hf_added_tokens(path, doc.get("added_tokens") or [])
    ids = {piece: i for i, (piece, _) in reversed(list(enumerate(vocab)))}
    for token in added:
        if token.normalized and collapse:
            raise ModelFileError(f"{path}: added token {token.content!r} is matched on normalized text: not supported with a normalizer")
        if ids.get(token.content) != token.id:
            raise ModelFileError(f"{path}: added token {token.content!r} has id {token.id}, not its id among the pieces")
    return UnigramData(vocab, unk_id, added, collapse, decoder, path)


def _parse_vocab(path: Path, table: Any) -> list[tuple[str, float]]:
    if not isinstance(table, list) or not table:
        raise ModelFileError(f"{path}: 'model.vocab' is not a non-empty list of [piece, score]")
    vocab = []
    for i, entry in enumerate(table):
        ok = isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and entry[0]
        if not ok or isinstance(entry[1], bool) or not isinstance(entry[1], (int, float)) or not math.isfinite(entry[1]):
            raise ModelFileError(f"{path}: piece {i} is {entry!r}, not [piece, finite score]")
        vocab.append((entry[0], float(entry[1])))
    return vocab


def _normalizer(path: Path, normalizer: Any) -> bool:
    """Whether the normalizer makes runs of spaces one: it may be that alone, or none."""
    if normalizer is None:
        return False
    steps = _flatten(normalizer, "normalizers")
    if steps != [_COLLAPSE]:
        kinds = ", ".join(repr(s.get("type") if isinstance(s, dict) else s) for s in steps)
        raise ModelFileError(f"{path}: normalizer {kinds} is not supported (none, or Replace of {SPACES!r} by ' ')")
    return True


def _metaspace(path: Path, step: Any, where: str) -> None:
    steps = _flatten(step, "pretokenizers") if step is not None else []
    ok = len(steps) == 1 and isinstance(steps[0], dict) and steps[0].get("type") == "Metaspace"
    if ok:
        options = steps[0]
        ok = (
            options.get("replacement") == REPLACEMENT and options.get("prepend_scheme", "always") == "always" and options.get("split", True)
        )
    if not ok:
        raise ModelFileError(f"{path}: {where} must be Metaspace with replacement {REPLACEMENT!r}, prepend_scheme 'always' and split")
