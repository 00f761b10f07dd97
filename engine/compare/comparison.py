"""One text, many tokenizers: where each cuts it, how many tokens, how well it compresses.

The rows of a comparison are ``SpanTokenizer``s (``engine.compare.baselines``): the character, byte
and word tokenizers, our byte-level BPE through ``BpeSpans``, our WordPiece through
``WordPieceSpans``, and Unigram or any other Hugging Face ``tokenizer.json`` (a WordPiece one
whose normalizer we cannot reproduce too) through ``engine.compare.hf_models`` (optional package).

Where two tokenizers cut the same text differently is measured against one reference row:
a token *differs* when the reference has no token with exactly its span.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from pathlib import Path

from engine.compare.baselines import ByteTokenizer, CharacterTokenizer, SpanTokenizer, Token, WordTokenizer, byte_offsets
from engine.corpus.counting import count_file
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.words import count_file_words
from engine.encode.tokenizer import Tokenizer
from engine.encode.wordpiece import WordPieceTokenizer
from engine.errors import CorpusError, ModelFileError
from engine.formats.rank_files import is_rank_file
from engine.train.trainer import Trainer
from engine.train.wordpiece.rule import SPECIAL_TOKENS, base_vocab
from engine.train.wordpiece.trainer import WordPieceTrainer


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


class WordPieceSpans:
    """A ``WordPieceTokenizer`` as a row: each piece spans the bytes of the word it covers,
    ``[UNK]`` its whole word; the whitespace between words belongs to no token."""

    kind = "WordPiece"

    def __init__(self, tokenizer: WordPieceTokenizer, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name
        self.vocab_size = len(tokenizer.vocab)

    def tokenize(self, text: str) -> list[Token]:
        at = byte_offsets(text)
        vocab = self.tokenizer.vocab
        unknown = self.tokenizer.unk_id
        return [
            Token(i, at[start], at[end], vocab[i].encode("utf-8"), unknown=i == unknown and not special, special=special)
            for i, start, end, special in self.tokenizer.encode_spans(text)
        ]


def load_span_tokenizer(path: str | os.PathLike[str], pattern: str | None = None) -> SpanTokenizer:
    """A model file as a row: what ``Tokenizer.load`` opens (byte-level BPE, rank files with
    ``pattern`` when they need one, WordPiece) through our engine; any other ``tokenizer.json``
    (Unigram, a WordPiece one whose normalizer we cannot reproduce, ...) through Hugging Face
    ``tokenizers``. ``ModelFileError`` in one line when neither can."""
    name = Path(path).name or str(path)
    if is_rank_file(path):  # named as tiktoken names its encodings: cl100k_base
        return BpeSpans(Tokenizer.from_tiktoken(path, pattern), name.removesuffix(".gz").removesuffix(".tiktoken"))
    try:
        model = Tokenizer.load(path)
    except ModelFileError as refusal:
        from engine.compare.hf_models import load_hf_json

        return load_hf_json(path, name, refusal)
    return WordPieceSpans(model, name) if isinstance(model, WordPieceTokenizer) else BpeSpans(model, name)


BPE_ROW = 3
"""Where ``corpus_tokenizers`` puts its BPE: the reference when no model is given."""


def corpus_tokenizers(
    corpus: str | os.PathLike[str],
    vocab_size: int = 1000,
    special_tokens: Sequence[str] = ("<|endoftext|>",),
    name: str | None = None,
) -> list[SpanTokenizer]:
    """The lecture's ladder on one corpus: character, byte, word (the corpus's words), a BPE
    trained on the same pre-tokens up to ``vocab_size``, and a WordPiece trained on the
    corpus's BERT words to the same size (where its alphabet alone is larger: its alphabet
    and as many merges as the BPE made)."""
    label = name or Path(corpus).name
    counts = count_file(corpus, PreTokenizer("gpt2", special_tokens))
    if not counts:
        raise CorpusError(f"{corpus}: no words to build a vocabulary from")
    trainer = Trainer(counts, vocab_size, special_tokens)
    trainer.run()
    words = count_file_words(corpus, "bert")
    alphabet = len(base_vocab(words, SPECIAL_TOKENS, sys.maxsize))
    wordpiece = WordPieceTrainer(words, vocab_size if vocab_size >= alphabet else alphabet + trainer.merges_done)
    wordpiece.run()
    return [
        CharacterTokenizer(),
        ByteTokenizer(),
        WordTokenizer(counts, special_tokens, name=f"word ({label})"),
        BpeSpans(Tokenizer.from_trainer(trainer), f"BPE ({label})"),
        WordPieceSpans(WordPieceTokenizer.from_trainer(wordpiece), f"WordPiece ({label})"),
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
