"""One text, many tokenizers: where each cuts it, how many tokens, how well it compresses.

The rows of a comparison are ``SpanTokenizer``s (``engine.compare.baselines``): the character, byte
and word tokenizers, our byte-level BPE through ``BpeSpans``, and WordPiece, Unigram or any
other Hugging Face ``tokenizer.json`` through ``engine.compare.hf_models`` (optional package).

Where two tokenizers cut the same text differently is measured against one reference row:
a token *differs* when the reference has no token with exactly its span.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from pathlib import Path

from engine.compare.baselines import ByteTokenizer, CharacterTokenizer, SpanTokenizer, Token, WordTokenizer
from engine.corpus.counting import count_file
from engine.corpus.pretokenize import PreTokenizer
from engine.encode.tokenizer import Tokenizer
from engine.errors import CorpusError, ModelFileError
from engine.formats.rank_files import is_rank_file
from engine.train.trainer import Trainer


class BpeSpans:
    """An ``engine.Tokenizer`` as a row: its ids, each token's bytes laid end to end."""

    kind = "BPE"

    def __init__(self, tokenizer: Tokenizer, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name
        self.vocab_size = len(tokenizer.vocab)
        self._special = set(tokenizer.special_ids.values())

    def tokenize(self, text: str) -> list[Token]:
        ids = self.tokenizer.encode(text)
        pieces = list(map(self.tokenizer.vocab.__getitem__, ids))
        ends = list(accumulate(map(len, pieces)))
        special = self._special
        return [Token(i, end - len(piece), end, piece, special=i in special) for i, piece, end in zip(ids, pieces, ends, strict=True)]


def load_span_tokenizer(path: str | os.PathLike[str], pattern: str | None = None) -> SpanTokenizer:
    """A model file as a row: what ``Tokenizer.load`` opens (byte-level BPE, rank files with
    ``pattern`` when they need one) through our engine; any other ``tokenizer.json``
    (WordPiece, Unigram, ...) through Hugging Face ``tokenizers``. ``ModelFileError`` in one
    line when neither can."""
    name = Path(path).name or str(path)
    if is_rank_file(path):  # named as tiktoken names its encodings: cl100k_base
        return BpeSpans(Tokenizer.load(path, pattern), name.removesuffix(".gz").removesuffix(".tiktoken"))
    try:
        return BpeSpans(Tokenizer.load(path), name)
    except ModelFileError as refusal:
        from engine.compare.hf_models import load_hf_json

        return load_hf_json(path, name, refusal)


def corpus_tokenizers(
    corpus: str | os.PathLike[str],
    vocab_size: int = 1000,
    special_tokens: Sequence[str] = ("<|endoftext|>",),
    name: str | None = None,
) -> list[SpanTokenizer]:
    """The lecture's ladder on one corpus: character, byte, word (the corpus's words) and a
    BPE trained on the same pre-tokens up to ``vocab_size``."""
    label = name or Path(corpus).name
    counts = count_file(corpus, PreTokenizer("gpt2", special_tokens))
    if not counts:
        raise CorpusError(f"{corpus}: no words to build a vocabulary from")
    trainer = Trainer(counts, vocab_size, special_tokens)
    trainer.run()
    return [
        CharacterTokenizer(),
        ByteTokenizer(),
        WordTokenizer(counts, special_tokens, name=f"word ({label})"),
        BpeSpans(Tokenizer.from_trainer(trainer), f"BPE ({label})"),
    ]


@dataclass(frozen=True)
class Row:
    """One tokenizer's cut of the text; its counts are worked out once, when first read."""

    tokenizer: SpanTokenizer
    tokens: list[Token]
    differs: list[bool]
    """Per token: the reference row has no token with exactly this span."""
    text_bytes: int

    @cached_property
    def unknown(self) -> int:
        return sum(t.unknown for t in self.tokens)

    @cached_property
    def differing(self) -> int:
        return sum(self.differs)

    @property
    def bytes_per_token(self) -> float:
        """The lecture's compression ratio: bytes of the text over tokens."""
        return self.text_bytes / len(self.tokens) if self.tokens else 0.0


def spans_of(tokens: Sequence[Token]) -> set[tuple[int, int]]:
    return {(t.start, t.end) for t in tokens}


def mark_differences(tokens: Sequence[Token], reference: set[tuple[int, int]] | None) -> list[bool]:
    """Which ``tokens`` have a span the reference has not (none, without a reference)."""
    if reference is None:
        return [False] * len(tokens)
    return [(t.start, t.end) not in reference for t in tokens]


def compare(text: str, tokenizers: Sequence[SpanTokenizer], reference: int | None = 0) -> list[Row]:
    """Every tokenizer's tokens of ``text``, marked against ``tokenizers[reference]``."""
    size = len(text.encode("utf-8"))
    return against([Row(t, t.tokenize(text), [], size) for t in tokenizers], reference)


def against(rows: Sequence[Row], reference: int | None) -> list[Row]:
    """The same rows marked against ``rows[reference]`` (none marked for None)."""
    spans = spans_of(rows[reference].tokens) if reference is not None else None
    return [
        Row(row.tokenizer, row.tokens, mark_differences(row.tokens, None if i == reference else spans), row.text_bytes)
        for i, row in enumerate(rows)
    ]
