"""Any Hugging Face ``tokenizer.json`` as a comparison row, through the optional
``tokenizers`` package (``pip install 'bpe-tui[hf]'``): WordPiece (BERT), Unigram
(SentencePiece, T5), WordLevel, and BPE files our engine does not read.

``tokenizers`` is imported only here, and only when such a file is opened: ``engine`` works
without it. Its tokens come with character offsets into the text, turned into UTF-8 byte
offsets here. They need not cover the text: WordPiece drops the spaces between words, and
Unigram's ``▁`` may share the span of the character after it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from engine.compare.baselines import Token, byte_offsets
from engine.errors import ModelFileError
from engine.formats.tokenizer_files import TOKENIZER_JSON

INSTALL = "pip install 'bpe-tui[hf]'"


class HfSpans:
    """A ``tokenizers.Tokenizer`` as a row, labelled with its model type."""

    def __init__(self, tokenizer: Any, kind: str, name: str, unknown_id: int | None) -> None:
        self.tokenizer = tokenizer
        self.kind = kind
        self.name = name
        self.vocab_size = tokenizer.get_vocab_size()
        self.unknown_id = unknown_id

    def tokenize(self, text: str) -> list[Token]:
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        at = byte_offsets(text)
        unknown = self.unknown_id
        return [
            Token(i, at[start], at[end], token.encode("utf-8"), unknown=i == unknown, special=bool(special))
            for i, token, (start, end), special in zip(
                encoding.ids, encoding.tokens, encoding.offsets, encoding.special_tokens_mask, strict=True
            )
        ]


def load_hf_json(path: str | os.PathLike[str], name: str, refusal: ModelFileError) -> HfSpans:
    """Open ``path`` (a ``tokenizer.json`` or a directory holding one) with ``tokenizers``.

    ``refusal`` is why our engine did not open it; it is what is raised when the file is not
    a readable ``tokenizer.json`` at all, or is a BPE one that ``tokenizers`` cannot open
    either (our message is the more precise).
    """
    file = Path(path) / TOKENIZER_JSON if Path(path).is_dir() else Path(path)
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
        kind = doc["model"]["type"]
    except (OSError, ValueError, TypeError, KeyError):
        raise refusal from None
    if not isinstance(kind, str):
        raise refusal
    try:
        import tokenizers
    except ImportError:
        if kind == "BPE":
            raise ModelFileError(f"{refusal} (or {INSTALL} to open it with Hugging Face tokenizers)") from None
        raise ModelFileError(f"{file}: a {kind} tokenizer opens through Hugging Face tokenizers: {INSTALL}") from None
    try:
        tokenizer = tokenizers.Tokenizer.from_str(json.dumps(doc))
    except Exception as e:  # tokenizers raises plain Exceptions with serde's message
        if kind == "BPE":
            raise refusal from None
        raise ModelFileError(f"{file}: Hugging Face tokenizers cannot open this {kind} tokenizer: {str(e).splitlines()[0]}") from None
    return HfSpans(tokenizer, kind, name, _unknown_id(tokenizer, doc["model"]))


def _unknown_id(tokenizer: Any, model: dict[str, Any]) -> int | None:
    """The id given to what is not in the vocabulary: WordPiece and WordLevel name a token,
    Unigram gives an id; byte-level models have none."""
    if isinstance(model.get("unk_id"), int):
        return int(model["unk_id"])
    token = model.get("unk_token")
    return tokenizer.token_to_id(token) if isinstance(token, str) else None
