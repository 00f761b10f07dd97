"""WordPiece model files: HF ``tokenizer.json`` with a WordPiece model, and BERT's ``vocab.txt``.

A ``tokenizer.json`` is read when ``engine.encode.wordpiece`` can encode exactly as Hugging
Face ``tokenizers`` does with it: a ``WordPiece`` model behind ``BertPreTokenizer``, with no
normalizer, ``Lowercase``, or a ``BertNormalizer`` whose other options change nothing this
engine cannot reproduce (``clean_text`` and ``strip_accents`` rest on Unicode tables of
``tokenizers``' own: refused; ``handle_chinese_chars`` is a fixed list of blocks: kept),
and a ``WordPiece`` decoder or none. ``truncation``, ``padding`` and ``post_processor``
shape batches for a model, not the tokens, and are not read. Anything else is refused in
one line naming the file and what is unsupported.

``vocab.txt`` is one token a line, the line number its id; it says nothing else, so it is
read as BERT's: ``[UNK]`` for the unknown, ``##`` before a continuing piece, words of at
most 100 characters, the BERT special tokens it holds, and no lowercasing unless asked.

Readers return a ``WordPieceData`` and raise ``ModelFileError``; writers return text, which
``WordPieceTokenizer.save_dir`` writes through ``atomic_write``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.corpus.stages import AddedToken
from engine.errors import ModelFileError
from engine.formats.atomic import Pathish
from engine.formats.tokenizer_files import MERGES_TXT, TOKENIZER_JSON, VOCAB_JSON, _flatten, _hf_added_tokens, _load_json, _read_text

VOCAB_TXT = "vocab.txt"
BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
"""BERT's special tokens: those a ``vocab.txt`` holds are its special tokens."""
UNK_TOKEN = "[UNK]"
PREFIX = "##"
MAX_INPUT_CHARS_PER_WORD = 100

WHITE_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
"""Unicode's ``White_Space``: what Rust's ``trim_end`` takes off a line of ``vocab.txt``."""


@dataclass(frozen=True, slots=True)
class WordPieceDecoder:
    """HF's ``WordPiece`` decoder: a token after the first loses ``prefix`` or gains a space
    before it; ``cleanup`` then takes the space off before ``.``, ``?``, ``!``, ``,`` and a
    few English contractions, token by token."""

    prefix: str = PREFIX
    cleanup: bool = True


@dataclass(frozen=True, slots=True)
class WordPieceData:
    """What a WordPiece file holds, in the terms of ``WordPieceTokenizer(...)``."""

    vocab: list[str]
    """Id -> token, added tokens included."""
    added_tokens: list[AddedToken]
    """Tokens cut out of the raw text whole, at their ids in ``vocab``."""
    unk_token: str
    prefix: str
    max_input_chars_per_word: int
    lowercase: bool
    handle_chinese_chars: bool
    """BertNormalizer's: each CJK ideograph a word of its own."""
    decoder: WordPieceDecoder | None
    """None: the file has no decoder (HF then joins the tokens with spaces)."""
    path: Path


# -- writing ------------------------------------------------------------------------------


def wordpiece_json(
    vocab: Sequence[str],
    added_tokens: Sequence[AddedToken],
    unk_token: str = UNK_TOKEN,
    prefix: str = PREFIX,
    max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD,
    lowercase: bool = False,
    handle_chinese_chars: bool = False,
    decoder: WordPieceDecoder | None = WordPieceDecoder(),  # noqa: B008  # frozen: one shared default does no harm
) -> str:
    """The text of an HF ``tokenizer.json``: every token in the model's vocabulary at its id
    (added tokens too, so HF gives them the same ids), BERT's pre-tokenizer."""
    added = [
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
    ]
    normalizer: dict[str, Any] | None = None
    if handle_chinese_chars:
        normalizer = {"type": "BertNormalizer", "clean_text": False, "handle_chinese_chars": True, "strip_accents": False}
        normalizer["lowercase"] = lowercase
    elif lowercase:
        normalizer = {"type": "Lowercase"}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": None,
        "decoder": None if decoder is None else {"type": "WordPiece", "prefix": decoder.prefix, "cleanup": decoder.cleanup},
        "model": {
            "type": "WordPiece",
            "unk_token": unk_token,
            "continuing_subword_prefix": prefix,
            "max_input_chars_per_word": max_input_chars_per_word,
            "vocab": {token: i for i, token in enumerate(vocab)},
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def vocab_txt(vocab: Sequence[str]) -> str:
    """BERT's ``vocab.txt``; ValueError for a token no line can hold (a line is read up to a
    newline, trailing whitespace taken off)."""
    for i, token in enumerate(vocab):
        if not token or "\n" in token or token[-1] in WHITE_SPACE:
            raise ValueError(f"token {i} ({token!r}) cannot be a line of {VOCAB_TXT}")
    return "".join(token + "\n" for token in vocab)


# -- reading ------------------------------------------------------------------------------


def is_wordpiece(path: Pathish) -> bool:
    """Whether ``path`` names a WordPiece model: a ``vocab.txt`` (any ``*vocab.txt``), a
    ``tokenizer.json`` whose model is WordPiece, or a directory holding one of them (its
    ``tokenizer.json`` first; GPT-2's ``vocab.json`` + ``merges.txt`` before ``vocab.txt``).
    A file that cannot be read is not: the reader it goes to says why."""
    path = Path(path)
    if path.is_dir():
        if (path / TOKENIZER_JSON).is_file():
            return _wordpiece_json(path / TOKENIZER_JSON)
        return (path / VOCAB_TXT).is_file() and not ((path / VOCAB_JSON).is_file() and (path / MERGES_TXT).is_file())
    if path.name.endswith(VOCAB_TXT):
        return True
    return path.suffix != ".txt" and _wordpiece_json(path)


def _wordpiece_json(path: Path) -> bool:
    """The model type, looked for only in a file that names WordPiece somewhere: a BPE file
    is not parsed twice."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if b'"WordPiece"' not in data:
        return False
    try:
        doc = json.loads(data)
    except ValueError:
        return True  # broken, and WordPiece by its text: its reader says where it breaks
    return isinstance(doc, dict) and isinstance(doc.get("model"), dict) and doc["model"].get("type") == "WordPiece"


def read_wordpiece(path: Pathish) -> WordPieceData:
    """Read a WordPiece ``tokenizer.json``, a ``vocab.txt``, or a directory holding either
    (its ``tokenizer.json`` first)."""
    path = Path(path)
    if path.is_dir():
        if (path / TOKENIZER_JSON).is_file():
            return read_wordpiece_json(path / TOKENIZER_JSON)
        if (path / VOCAB_TXT).is_file():
            return read_vocab_txt(path / VOCAB_TXT)
        raise ModelFileError(f"{path}: holds neither {TOKENIZER_JSON} nor {VOCAB_TXT}")
    if path.name.endswith(VOCAB_TXT):
        return read_vocab_txt(path)
    return read_wordpiece_json(path)


def read_vocab_txt(path: Pathish, lowercase: bool = False) -> WordPieceData:
    """Read BERT's ``vocab.txt`` as ``tokenizers`` reads it (``WordPiece.from_file``): each
    line's trailing whitespace taken off. Refused: an empty file, a blank line, a token on
    two lines, no ``[UNK]``."""
    path = Path(path)
    text = _read_text(path)
    if not text:
        raise ModelFileError(f"{path}: the file is empty")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    vocab = [line.rstrip(WHITE_SPACE) for line in lines]
    first: dict[str, int] = {}
    for n, token in enumerate(vocab, start=1):
        if not token:
            raise ModelFileError(f"{path}: line {n} is blank (a line is a token, its number the id)")
        seen = first.setdefault(token, n)
        if seen != n:
            raise ModelFileError(f"{path}: line {n} repeats token {token!r} of line {seen}")
    if UNK_TOKEN not in first:
        raise ModelFileError(f"{path}: no {UNK_TOKEN} token (what a word with no cover becomes)")
    added = [AddedToken(token, first[token] - 1) for token in BERT_SPECIAL_TOKENS if token in first]
    return WordPieceData(vocab, added, UNK_TOKEN, PREFIX, MAX_INPUT_CHARS_PER_WORD, lowercase, False, WordPieceDecoder(), path)


def read_wordpiece_json(path: Pathish) -> WordPieceData:
    """Read a WordPiece ``tokenizer.json`` (ours, or one HF tokenizers wrote)."""
    path = Path(path)
    doc = _load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise ModelFileError(f"{path}: not a tokenizer.json (no 'model' section)")
    model = doc["model"]
    if model.get("type") != "WordPiece":
        raise ModelFileError(f"{path}: model type is {model.get('type')!r}, not WordPiece")
    unk_token = _field(path, model, "unk_token", str)
    prefix = _field(path, model, "continuing_subword_prefix", str)
    longest = _field(path, model, "max_input_chars_per_word", int)
    if longest < 0:
        raise ModelFileError(f"{path}: 'model.max_input_chars_per_word' is {longest}, below 0")
    vocab = _parse_vocab(path, model.get("vocab"))
    if unk_token not in vocab:
        raise ModelFileError(f"{path}: the unk_token {unk_token!r} is not in the vocabulary")
    lowercase, chinese = _normalizer(path, doc.get("normalizer"))
    _pre_tokenizer(path, doc.get("pre_tokenizer"))
    decoder = _decoder(path, doc.get("decoder"))
    added = _added_ids(vocab, _hf_added_tokens(path, doc.get("added_tokens") or []))
    for token in added:
        if token.normalized and (lowercase or chinese):
            raise ModelFileError(
                f"{path}: added token {token.content!r} is matched on normalized text (normalized: true): not supported with a normalizer"
            )
        if token.id == len(vocab):
            vocab.append(token.content)
    return WordPieceData(vocab, added, unk_token, prefix, longest, lowercase, chinese, decoder, path)


def _field(path: Path, model: dict[str, Any], key: str, kind: type[Any]) -> Any:
    value = model.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ModelFileError(f"{path}: 'model.{key}' is missing or not {'a string' if kind is str else 'an integer'}")
    return value


def _parse_vocab(path: Path, table: Any) -> list[str]:
    """The vocabulary in id order: its ids must run from 0 up, each used once."""
    if not isinstance(table, dict) or not table:
        raise ModelFileError(f"{path}: 'model.vocab' is not a non-empty {{token: id}} object")
    vocab: list[str | None] = [None] * len(table)
    for token, i in table.items():
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise ModelFileError(f"{path}: token {token!r} has id {i!r}, not a non-negative integer")
        if i >= len(table):
            raise ModelFileError(f"{path}: token {token!r} has id {i}, beyond the {len(table):,} tokens (ids run from 0 up)")
        if vocab[i] is not None:
            raise ModelFileError(f"{path}: id {i} is used twice ({vocab[i]!r} and {token!r})")
        vocab[i] = token
    return [token for token in vocab if token is not None]  # all of them: ids 0..n-1 each used once


def _added_ids(vocab: list[str], added: list[AddedToken]) -> list[AddedToken]:
    """The added tokens at the ids HF gives them: a token of the vocabulary takes its id
    there, any other the next id after the vocabulary and the tokens added before it."""
    ids = {token: i for i, token in enumerate(vocab)}
    out: list[AddedToken] = []
    for token in added:
        i = ids.get(token.content)
        if i is None:
            i = ids[token.content] = max(len(vocab), max((t.id + 1 for t in out), default=0))
        out.append(AddedToken(token.content, i, token.special, token.normalized, token.lstrip, token.rstrip, token.single_word))
    return out


def _normalizer(path: Path, normalizer: Any) -> tuple[bool, bool]:
    """``(lowercase, handle_chinese_chars)`` of the normalizer: none, ``Lowercase``, or a
    ``BertNormalizer`` that changes nothing else, alone or in a ``Sequence``."""
    lowercase = chinese = False
    for step in _flatten(normalizer, "normalizers") if normalizer is not None else []:
        kind = step.get("type") if isinstance(step, dict) else step
        if kind == "Lowercase":
            lowercase = True
            continue
        if kind != "BertNormalizer":
            raise ModelFileError(f"{path}: normalizer {kind!r} is not supported (Lowercase and BertNormalizer are)")
        options = {key: step.get(key) for key in ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase")}
        if not all(isinstance(v, bool) or (v is None and k == "strip_accents") for k, v in options.items()):
            raise ModelFileError(f"{path}: BertNormalizer's options must be true or false (strip_accents may be null): {options}")
        if options["clean_text"]:
            raise ModelFileError(
                f"{path}: BertNormalizer with clean_text: true is not supported: it drops control and format characters "
                "by Unicode tables of Hugging Face tokenizers' own"
            )
        strip = options["strip_accents"] if options["strip_accents"] is not None else options["lowercase"]
        if strip:
            raise ModelFileError(
                f"{path}: BertNormalizer with strip_accents is not supported: it decomposes the text (NFD) by Unicode "
                "tables of Hugging Face tokenizers' own"
            )
        lowercase = lowercase or bool(options["lowercase"])
        chinese = chinese or bool(options["handle_chinese_chars"])
    return lowercase, chinese


def _pre_tokenizer(path: Path, pre: Any) -> None:
    """Refuse any pre-tokenizer but ``BertPreTokenizer`` (alone, or alone in a ``Sequence``)."""
    steps = _flatten(pre, "pretokenizers") if pre is not None else []
    kinds = [step.get("type") if isinstance(step, dict) else step for step in steps]
    if kinds != ["BertPreTokenizer"]:
        shown = ", ".join(map(repr, kinds)) or "none"
        raise ModelFileError(f"{path}: pre_tokenizer {shown} is not supported: BertPreTokenizer is")


def _decoder(path: Path, decoder: Any) -> WordPieceDecoder | None:
    if decoder is None:
        return None
    if not isinstance(decoder, dict) or decoder.get("type") != "WordPiece":
        kind = decoder.get("type") if isinstance(decoder, dict) else decoder
        raise ModelFileError(f"{path}: decoder {kind!r} is not supported (WordPiece or none)")
    prefix, cleanup = decoder.get("prefix"), decoder.get("cleanup")
    if not isinstance(prefix, str) or not isinstance(cleanup, bool):
        raise ModelFileError(f"{path}: the WordPiece decoder's prefix must be a string and its cleanup true or false")
    return WordPieceDecoder(prefix, cleanup)
