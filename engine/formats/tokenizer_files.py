"""Tokenizer files: HF ``tokenizer.json``, GPT-2 ``vocab.json`` + ``merges.txt``, tiktoken ranks.

Every format stores tokens as GPT-2's printable byte strings (``engine.formats.byte_unicode``), except
tiktoken's, which stores base64 bytes (read in ``engine.formats.rank_files``). Readers return a
``ModelData`` and raise ``ModelFileError`` naming the file and what is wrong; writers go
through ``atomic_write``, so an interrupted save leaves the old file or the new one, never
half of one.

An HF file's pre-tokenizer may be ``ByteLevel`` (with or without its regex and
``add_prefix_space``), after any ``Split``s (a regex or a string, any behaviour, inverted
or not), nested in ``Sequence``s; its normalizer none or ``NFC``; its added tokens special
or not, with their ids and matching options. Anything else that changes the text (another
normalizer or pre-tokenizer, a WordPiece or Unigram model) is refused in one line.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from engine.corpus.pretokenize import GPT2_PATTERN, PATTERNS
from engine.corpus.stages import BEHAVIORS, NORMALIZERS, AddedToken, Behavior, PatternSpec, PrefixSpace, Split, Stage, simplest
from engine.errors import ModelFileError, unreadable
from engine.formats.atomic import Pathish
from engine.formats.byte_unicode import bytes_to_token_string, token_string_to_bytes, token_strings_to_bytes
from engine.formats.hf_regex import from_onig, to_onig

TOKENIZER_JSON = "tokenizer.json"
VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"


@dataclass(frozen=True, slots=True)
class ModelData:
    """What a tokenizer file holds, in the terms of ``Tokenizer(...)``."""

    vocab: dict[int, bytes]
    """Every id, special tokens included (as their UTF-8 bytes)."""
    merges: list[tuple[bytes, bytes]]
    special_tokens: list[str | AddedToken]
    """Tokens cut out of the text whole: strings (their ids are the vocabulary's), or
    ``AddedToken``s with their ids."""
    pattern: PatternSpec
    """A name from ``PATTERNS`` when the regex is one of them, else the regex itself, or stages."""
    path: Path
    """The file that named tokens and ids (for messages about them)."""
    direct: bool = False
    """HF's ``ignore_merges``: a pre-token that is a vocabulary entry is that entry."""
    normalizer: str | None = None
    """``"NFC"``: the text between added tokens is normalized before pre-tokenization."""


# -- writing ------------------------------------------------------------------------------


def _token_table(vocab: Mapping[int, bytes], special_tokens: Sequence[str]) -> dict[str, int]:
    """Token string -> id for the ordinary tokens. Where two ids hold the same bytes the last
    wins, as in ``Tokenizer.encoder``: the id encoding produces."""
    specials = {s.encode("utf-8") for s in special_tokens}
    table = {bytes_to_token_string(t): i for i, t in sorted(vocab.items()) if t not in specials}
    return dict(sorted(table.items(), key=lambda kv: kv[1]))


def _merge_lines(merges: Sequence[tuple[bytes, bytes]]) -> list[str]:
    return [f"{bytes_to_token_string(a)} {bytes_to_token_string(b)}" for a, b in merges]


def added_tokens(special_tokens: Sequence[str | AddedToken]) -> list[AddedToken]:
    """Special tokens as ``AddedToken``s, each text once (its first entry); a string is a
    special token matched as written, its id -1 (the vocabulary's)."""
    tokens: dict[str, AddedToken] = {}
    for s in special_tokens:
        token = s if isinstance(s, AddedToken) else AddedToken(s, -1)
        tokens.setdefault(token.content, token)
    return list(tokens.values())


def _special_ids(vocab: Mapping[int, bytes], special_tokens: Sequence[str]) -> dict[str, int]:
    ids = {t: i for i, t in vocab.items()}
    return {s: ids[s.encode("utf-8")] for s in special_tokens}


HF_BEHAVIORS: dict[str, Behavior] = dict(
    zip(["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"], BEHAVIORS, strict=True)
)
"""HF's names of the ``Split`` behaviours."""


def hf_json(
    vocab: Mapping[int, bytes],
    merges: Sequence[tuple[bytes, bytes]],
    special_tokens: Sequence[str | AddedToken],
    pattern: PatternSpec,
    direct: bool = False,
    normalizer: str | None = None,
) -> str:
    """The text of an HF ``tokenizer.json``: a BPE model behind the ``Split``s of ``pattern``
    and a byte-level pre-tokenizer (regexes stored as used), special tokens as added tokens
    at their ids. ``direct`` is stored as ``ignore_merges``, which changes nothing when it
    holds."""
    tokens = added_tokens(special_tokens)
    found = _special_ids(vocab, [t.content for t in tokens if t.id < 0])
    ids = {t.content: t.id if t.id >= 0 else found[t.content] for t in tokens}
    added = [
        {
            "id": ids[t.content],
            "content": t.content,
            "single_word": t.single_word,
            "lstrip": t.lstrip,
            "rstrip": t.rstrip,
            "normalized": t.normalized,
            "special": t.special,
        }
        for t in sorted(tokens, key=lambda t: ids[t.content])
    ]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": normalizer} if normalizer else None,
        "pre_tokenizer": _hf_pre_tokenizer_json(pattern),
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
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
            "vocab": _token_table(vocab, list(ids)) | ids,
            "merges": _merge_lines(merges),
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def _hf_pre_tokenizer_json(pattern: PatternSpec) -> dict[str, Any]:
    """``pattern`` as HF's pre-tokenizer: its ``Split``s, then ``ByteLevel`` (which takes a
    final prefix space, or a prefix space then GPT-2's regex, as its own options)."""
    stages = list((Split(PATTERNS.get(pattern, pattern)),) if isinstance(pattern, str) else pattern)
    options = {"add_prefix_space": False, "use_regex": False}
    if stages[-2:] == [PrefixSpace(), Split(GPT2_PATTERN)]:
        del stages[-2:]
        options = {"add_prefix_space": True, "use_regex": True}
    elif stages[-1:] == [PrefixSpace()]:
        del stages[-1:]
        options["add_prefix_space"] = True
    steps = []
    for stage in stages:
        if not isinstance(stage, Split):
            raise ValueError("a tokenizer.json has a prefix space only at the end of the pre-tokenizer (ByteLevel's add_prefix_space)")
        behavior = next(name for name, b in HF_BEHAVIORS.items() if b == stage.behavior)
        steps.append({"type": "Split", "pattern": {"Regex": to_onig(stage.pattern)}, "behavior": behavior, "invert": stage.invert})
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": options["add_prefix_space"],
        "trim_offsets": True,
        "use_regex": options["use_regex"],
    }
    return {"type": "Sequence", "pretokenizers": [*steps, byte_level]}


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
        for have, missing in ((VOCAB_JSON, MERGES_TXT), (MERGES_TXT, VOCAB_JSON)):
            if (path / have).is_file():
                raise ModelFileError(f"{path}: holds {have} but not {missing}, the other half of GPT-2's files")
        raise ModelFileError(f"{path}: holds neither {TOKENIZER_JSON} nor {VOCAB_JSON} + {MERGES_TXT} nor BERT's vocab.txt")
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
    if model.get("byte_fallback"):
        raise ModelFileError(f"{path}: BPE byte_fallback is not supported (a byte-level model needs none)")
    normalizer = _hf_normalizer(path, doc.get("normalizer"))
    pattern = _hf_pre_tokenizer(path, doc.get("pre_tokenizer"))
    added = _hf_added_tokens(path, doc.get("added_tokens") or [])
    table = model.get("vocab")
    if isinstance(table, dict):  # added tokens may be listed there too, by content (not as bytes)
        added = _hf_added_ids(path, added, table)
        ids = {a.id for a in added}
        table = {t: i for t, i in table.items() if not (isinstance(i, int) and i in ids)}  # a bad id is named below
    vocab = _parse_vocab(path, table, "'model.vocab'")
    merges = _parse_merges(path, model.get("merges"))
    for a in added:
        vocab[a.id] = a.content.encode("utf-8")
    return ModelData(vocab, merges, list(added), pattern, path, bool(model.get("ignore_merges")), normalizer)


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
    specials: list[str | AddedToken] = list(special_tokens or [])
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


def _hf_normalizer(path: Path, normalizer: Any) -> str | None:
    """The normalizer's name: None, or ``NFC`` (alone or in a ``Sequence``)."""
    steps = _flatten(normalizer, "normalizers") if normalizer is not None else []
    names = [step.get("type") if isinstance(step, dict) else step for step in steps]
    if not names:
        return None
    if all(name == "NFC" for name in names):  # not a set: a damaged file's step may be a list
        return "NFC"
    changes = next(name for name in names if name != "NFC")
    raise ModelFileError(
        f"{path}: normalizer {changes!r} is not supported ({', '.join(NORMALIZERS)} only): it changes the text before byte-level BPE"
    )


def _flatten(step: Any, key: str) -> list[Any]:
    """The steps of a ``Sequence`` (``key`` lists them), nested ones in order; a lone step."""
    if isinstance(step, dict) and step.get("type") == "Sequence":
        inner = step.get(key)
        if not isinstance(inner, list):
            return [step]  # refused by the caller as a step it does not know
        return [s for item in inner for s in _flatten(item, key)]
    return [step]


def _hf_pre_tokenizer(path: Path, pre: Any) -> PatternSpec:
    """The stages of a byte-level pre-tokenizer: any ``Split``s, then ``ByteLevel``, which
    adds a prefix space and GPT-2's regex as its options say; in its simplest form (a name
    from ``PATTERNS`` or a regex when that is all it does)."""
    steps = _flatten(pre, "pretokenizers")
    if not steps or not all(isinstance(s, dict) for s in steps):
        raise ModelFileError(f"{path}: no byte-level pre_tokenizer (got {json.dumps(pre)[:80]})")
    *splits, last = steps
    if last.get("type") != "ByteLevel":
        raise ModelFileError(f"{path}: pre_tokenizer does not end in ByteLevel: not a byte-level BPE tokenizer")
    stages: list[Stage] = []
    for step in splits:
        kind = step.get("type")
        if kind == "ByteLevel":
            raise ModelFileError(f"{path}: ByteLevel is not the last pre_tokenizer: a Split after it would see its byte characters")
        if kind != "Split":
            raise ModelFileError(f"{path}: pre_tokenizer {kind!r} is not supported (ByteLevel, Split and Sequence are)")
        stages.append(_hf_split(path, step))
    if last.get("add_prefix_space"):
        stages.append(PrefixSpace())
    if last.get("use_regex", True):
        stages.append(Split(GPT2_PATTERN))
    spec = simplest(stages)
    if isinstance(spec, str):
        return next((name for name, p in PATTERNS.items() if p == spec), spec)
    return spec


def _hf_split(path: Path, step: dict[str, Any]) -> Split:
    pattern = step.get("pattern")
    if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
        text = from_onig(pattern["Regex"])
    elif isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
        text = regex.escape(pattern["String"])
    else:
        raise ModelFileError(
            f"{path}: a Split pre_tokenizer's pattern is not {{'Regex': ...}} or {{'String': ...}}: {json.dumps(pattern)[:80]}"
        )
    behavior = HF_BEHAVIORS.get(step.get("behavior"))  # type: ignore[arg-type]  # any JSON value; None when unknown
    if behavior is None:
        raise ModelFileError(f"{path}: Split behavior {step.get('behavior')!r} is none of {', '.join(HF_BEHAVIORS)}")
    try:
        regex.compile(text)
    except regex.error as e:
        raise ModelFileError(f"{path}: the pre_tokenizer's regex does not compile ({e}): {text[:60]!r}") from None
    return Split(text, behavior, bool(step.get("invert")))


def _hf_added_ids(path: Path, added: list[AddedToken], table: dict[Any, Any]) -> list[AddedToken]:
    """The added tokens with the ids HF gives them, which are the file's in any file HF
    wrote: a token that is also in the model's vocabulary takes the id there; any other
    takes the next id after the vocabulary and the tokens added before it. A token the
    model's vocabulary has, as other bytes, at another id is refused (HF would give it
    that entry's id)."""
    size = len(table)
    ids: dict[str, int] = {}
    out = []
    for token in added:
        if token.content in ids:
            i = ids[token.content]
        elif isinstance(table.get(token.content), int) and not isinstance(table[token.content], bool):
            i = table[token.content]
            try:
                same = i == token.id or token_string_to_bytes(token.content) == token.content.encode("utf-8")
            except KeyError:
                same = True  # no byte-level entry can be written so: the entry is this added token
            if not same:
                raise ModelFileError(
                    f"{path}: added token {token.content!r} (id {token.id}) is also the model's byte-level token {token.content!r} "
                    f"(id {i}), which stands for other bytes: not supported"
                )
        else:
            top = max(ids.values(), default=None)
            i = size if top is None or (top < size and size) else top + 1
        ids[token.content] = i
        out.append(dataclasses.replace(token, id=i))
    return out


def _hf_added_tokens(path: Path, added: Any) -> list[AddedToken]:
    """The ``added_tokens``, each with its id and options (HF's defaults where absent)."""
    if not isinstance(added, list) or not all(
        isinstance(a, dict) and isinstance(a.get("content"), str) and isinstance(a.get("id"), int) for a in added
    ):
        raise ModelFileError(f"{path}: 'added_tokens' must be a list of {{'id': int, 'content': str}}")
    tokens = []
    for a in added:
        if not a["content"]:
            continue  # HF ignores an empty added token
        flags = {key: a.get(key, key == "normalized") for key in ("special", "normalized", "lstrip", "rstrip", "single_word")}
        if not all(isinstance(v, bool) for v in flags.values()):
            raise ModelFileError(f"{path}: added token {a['content']!r}: its options must be true or false")
        tokens.append(AddedToken(a["content"], a["id"], **flags))
    return tokens
