"""Tokenizer files: HF ``tokenizer.json``, GPT-2 ``vocab.json`` + ``merges.txt``, tiktoken ranks.

Every format stores tokens as GPT-2's printable byte strings (``engine.formats.byte_unicode``), except
tiktoken's, which stores base64 bytes. Readers return a ``ModelData`` and raise
``ModelFileError`` naming the file and what is wrong; writers go through ``atomic_write``, so
an interrupted save leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from engine.corpus.pretokenize import PATTERNS
from engine.errors import ModelFileError, unreadable
from engine.formats.atomic import Pathish
from engine.formats.byte_unicode import bytes_to_token_string, token_string_to_bytes, token_strings_to_bytes

TOKENIZER_JSON = "tokenizer.json"
VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"


@dataclass(frozen=True, slots=True)
class ModelData:
    """What a tokenizer file holds, in the terms of ``Tokenizer(...)``."""

    vocab: dict[int, bytes]
    """Every id, special tokens included (as their UTF-8 bytes)."""
    merges: list[tuple[bytes, bytes]]
    special_tokens: list[str]
    pattern: str
    """A name from ``PATTERNS`` when the regex is one of them, else the regex itself."""
    path: Path
    """The file that named tokens and ids (for messages about them)."""
    direct: bool = False
    """HF's ``ignore_merges``: a pre-token that is a vocabulary entry is that entry."""


# -- writing ------------------------------------------------------------------------------


def _token_table(vocab: Mapping[int, bytes], special_tokens: Sequence[str]) -> dict[str, int]:
    """Token string -> id for the ordinary tokens. Where two ids hold the same bytes the last
    wins, as in ``Tokenizer.encoder``: the id encoding produces."""
    specials = {s.encode("utf-8") for s in special_tokens}
    table = {bytes_to_token_string(t): i for i, t in sorted(vocab.items()) if t not in specials}
    return dict(sorted(table.items(), key=lambda kv: kv[1]))


def _merge_lines(merges: Sequence[tuple[bytes, bytes]]) -> list[str]:
    return [f"{bytes_to_token_string(a)} {bytes_to_token_string(b)}" for a, b in merges]


def _special_ids(vocab: Mapping[int, bytes], special_tokens: Sequence[str]) -> dict[str, int]:
    ids = {t: i for i, t in vocab.items()}
    return {s: ids[s.encode("utf-8")] for s in special_tokens}


def hf_json(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str],
    pattern: str,
    direct: bool = False,
) -> str:
    """The text of an HF ``tokenizer.json``: a BPE model behind a regex ``Split`` and a
    byte-level pre-tokenizer (the regex stored as used), special tokens as added tokens.
    ``direct`` is stored as ``ignore_merges``, which changes nothing when it holds."""
    added = [
        {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for s, i in sorted(_special_ids(vocab, special_tokens).items(), key=lambda kv: kv[1])
    ]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": PATTERNS.get(pattern, pattern)}, "behavior": "Isolated", "invert": False},
                byte_level,
            ],
        },
        "post_processor": None,
        "decoder": {**byte_level, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": direct,
            # Special tokens too, by content: HF gives an added token absent from the model's
            # vocabulary a new id.
            "vocab": _token_table(vocab, special_tokens) | _special_ids(vocab, special_tokens),
            "merges": _merge_lines(merges),
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def gpt2_vocab_json(vocab: Mapping[int, bytes], special_tokens: Sequence[str]) -> str:
    """GPT-2's ``vocab.json``: ordinary tokens and, like GPT-2's ``<|endoftext|>``, the special ones."""
    table = _token_table(vocab, special_tokens)
    for s, i in _special_ids(vocab, special_tokens).items():
        table[bytes_to_token_string(s.encode("utf-8"))] = i
    return json.dumps(dict(sorted(table.items(), key=lambda kv: kv[1])), ensure_ascii=False) + "\n"


def gpt2_merges_txt(merges: Sequence[tuple[bytes, bytes]]) -> str:
    return "\n".join(["#version: 0.2", *_merge_lines(merges)]) + "\n"


def tiktoken_ranks(vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]], special_tokens: Sequence[str]) -> str:
    """tiktoken's ``.tiktoken`` text: ``base64(token) rank`` per line, the rank being the id.

    tiktoken merges the adjacent pair whose *result* has the lowest rank, so ids must grow
    with merge order; otherwise tiktoken would merge in a different order and ValueError is
    raised.
    """
    ids = {t: i for i, t in vocab.items()}
    results = [ids[a + b] for a, b in merges]
    for rank, (earlier, later) in enumerate(zip(results, results[1:], strict=False), start=1):
        if later <= earlier:
            raise ValueError(
                f"merge {rank} has id {later}, not above the previous merge's {earlier}: tiktoken ranks must follow merge order"
            )
    table = _token_table(vocab, special_tokens)
    return "".join(f"{base64.b64encode(token_string_to_bytes(s)).decode('ascii')} {i}\n" for s, i in table.items())


# -- reading ------------------------------------------------------------------------------


def read_model(path: Pathish) -> ModelData:
    """Read a ``tokenizer.json``, or a directory holding one or ``vocab.json`` + ``merges.txt``."""
    path = Path(path)
    if path.is_dir():
        if (path / TOKENIZER_JSON).is_file():
            return read_hf_json(path / TOKENIZER_JSON)
        if (path / VOCAB_JSON).is_file() and (path / MERGES_TXT).is_file():
            return read_gpt2_files(path / VOCAB_JSON, path / MERGES_TXT)
        raise ModelFileError(f"{path}: holds neither {TOKENIZER_JSON} nor {VOCAB_JSON} + {MERGES_TXT}")
    if path.suffix == ".txt" and path.name != TOKENIZER_JSON:
        raise ModelFileError(f"{path}: not a tokenizer.json (pass the directory holding {VOCAB_JSON} + {MERGES_TXT})")
    return read_hf_json(path)


def read_hf_json(path: Pathish) -> ModelData:
    """Read a byte-level BPE ``tokenizer.json`` (ours or one written by HF tokenizers)."""
    path = Path(path)
    doc = _load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise ModelFileError(f"{path}: not a tokenizer.json (no 'model' section)")
    model = doc["model"]
    if model.get("type", "BPE") != "BPE":
        raise ModelFileError(f"{path}: model type is {model.get('type')!r}, only BPE is supported")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise ModelFileError(f"{path}: BPE option {key}={model[key]!r} is not supported")
    if model.get("dropout"):
        raise ModelFileError(f"{path}: BPE dropout is not supported")
    if doc.get("normalizer") is not None:
        raise ModelFileError(f"{path}: a normalizer is not supported (byte-level BPE uses none)")
    pattern = _hf_pattern(path, doc.get("pre_tokenizer"))
    added = doc.get("added_tokens") or []
    if not isinstance(added, list) or not all(
        isinstance(a, dict) and isinstance(a.get("content"), str) and isinstance(a.get("id"), int) for a in added
    ):
        raise ModelFileError(f"{path}: 'added_tokens' must be a list of {{'id': int, 'content': str}}")
    table = model.get("vocab")
    if isinstance(table, dict):  # added tokens may be listed there by content, not as bytes
        table = {t: i for t, i in table.items() if t not in {a["content"] for a in added}}
    vocab = _parse_vocab(path, table, "'model.vocab'")
    merges = _parse_merges(path, model.get("merges"))
    for a in added:
        vocab[a["id"]] = a["content"].encode("utf-8")
    return ModelData(vocab, merges, [a["content"] for a in added], pattern, path, bool(model.get("ignore_merges")))


def read_gpt2_files(vocab_json: Pathish, merges_txt: Pathish, special_tokens: Sequence[str] | None = None) -> ModelData:
    """Read GPT-2's ``vocab.json`` + ``merges.txt``.

    Entries that are neither a single byte nor made by a merge (GPT-2's ``<|endoftext|>``)
    can never come out of byte-level merging, so they become special tokens, after any
    given in ``special_tokens``.
    """
    vocab_json, merges_txt = Path(vocab_json), Path(merges_txt)
    vocab = _parse_vocab(vocab_json, _load_json(vocab_json), "the top level")
    pairs, lines = [], []
    for n, line in enumerate(_read_text(merges_txt).splitlines(), start=1):
        if not line.strip() or (n == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise ModelFileError(f"{merges_txt}: line {n} is not two tokens separated by a space: {line[:60]!r}")
        pairs.append(parts)
        lines.append(n)
    merges = _merge_pairs(merges_txt, pairs, lambda k: f"line {lines[k]}")
    specials = list(special_tokens or [])
    made = {a + b for a, b in merges}
    for _, token in sorted(vocab.items()):
        text = token.decode("utf-8", errors="replace")
        if len(token) > 1 and token not in made and text not in specials:
            specials.append(text)
    return ModelData(vocab, merges, specials, "gpt2", vocab_json)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ModelFileError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise ModelFileError(unreadable(path, e)) from None


def _load_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        truncated = not text[e.pos :].strip() or e.msg.startswith("Unterminated string")
        what = "truncated JSON" if truncated else "invalid JSON"
        raise ModelFileError(f"{path}: {what} at line {e.lineno} column {e.colno} ({e.msg})") from None


def _to_bytes(path: Path, token: Any, where: str) -> bytes:
    if not isinstance(token, str):
        raise ModelFileError(f"{path}: {where}: token {token!r} is not a string")
    try:
        return token_string_to_bytes(token)
    except KeyError as e:
        raise ModelFileError(f"{path}: {where}: token {token!r} has {e.args[0]!r}, outside GPT-2's byte-level alphabet") from None


def _all_to_bytes(path: Path, tokens: list[Any], where: Callable[[int], str]) -> list[bytes]:
    """``_to_bytes`` of each token, converted all at once (a model file holds 100,000s of
    them); a bad one is found again one by one, to name it (``where(index)``)."""
    try:
        return token_strings_to_bytes(tokens)
    except (KeyError, TypeError):
        return [_to_bytes(path, token, where(k)) for k, token in enumerate(tokens)]


def _parse_vocab(path: Path, table: Any, where: str) -> dict[int, bytes]:
    if not isinstance(table, dict) or not table:
        raise ModelFileError(f"{path}: {where} is not a non-empty {{token: id}} object")
    ids: list[int] = []
    seen: set[int] = set()
    for token, i in table.items():
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise ModelFileError(f"{path}: token {token!r} has id {i!r}, not a non-negative integer")
        if i in seen:
            raise ModelFileError(f"{path}: id {i} is used twice")
        seen.add(i)
        ids.append(i)
    return dict(zip(ids, _all_to_bytes(path, list(table), lambda k: f"id {ids[k]}"), strict=True))


def _parse_merges(path: Path, merges: Any) -> list[tuple[bytes, bytes]]:
    if not isinstance(merges, list):
        raise ModelFileError(f"{path}: 'model.merges' is missing or not a list")
    pairs = []
    for rank, m in enumerate(merges):
        parts = m.split(" ") if isinstance(m, str) else m
        if not isinstance(parts, list) or len(parts) != 2:
            raise ModelFileError(f"{path}: merge {rank} is not a pair of tokens: {m!r}")
        pairs.append(parts)
    return _merge_pairs(path, pairs, lambda k: f"merge {k}")


def _merge_pairs(path: Path, pairs: list[list[Any]], where: Callable[[int], str]) -> list[tuple[bytes, bytes]]:
    """The merges, as pairs of bytes, of pairs of token strings (``where``: names merge k)."""
    tokens = _all_to_bytes(path, [t for pair in pairs for t in pair], lambda k: where(k // 2))
    return list(zip(tokens[0::2], tokens[1::2], strict=True))


def _hf_pattern(path: Path, pre: Any) -> str:
    """The regex of a byte-level pre-tokenizer: ``ByteLevel`` with its own (GPT-2's) regex, or
    a regex ``Split`` followed by ``ByteLevel`` without one."""
    steps = pre.get("pretokenizers") if isinstance(pre, dict) and pre.get("type") == "Sequence" else [pre]
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise ModelFileError(f"{path}: no byte-level pre_tokenizer (got {json.dumps(pre)[:80]})")
    *splits, last = steps
    if last.get("type") != "ByteLevel":
        raise ModelFileError(f"{path}: pre_tokenizer does not end in ByteLevel: not a byte-level BPE tokenizer")
    if last.get("add_prefix_space"):
        raise ModelFileError(f"{path}: ByteLevel add_prefix_space=true is not supported")
    if not splits and last.get("use_regex", True):
        return "gpt2"
    if len(splits) == 1 and not last.get("use_regex", True):
        split = splits[0]
        pattern = split.get("pattern", {}).get("Regex") if isinstance(split.get("pattern"), dict) else None
        if split.get("type") == "Split" and isinstance(pattern, str) and split.get("behavior") == "Isolated" and not split.get("invert"):
            try:
                regex.compile(pattern)
            except regex.error as e:
                raise ModelFileError(f"{path}: the pre_tokenizer's regex does not compile ({e})") from None
            return next((name for name, p in PATTERNS.items() if p == pattern), pattern)
    raise ModelFileError(f"{path}: unsupported pre_tokenizer (expected ByteLevel, or a regex Split then ByteLevel)")
