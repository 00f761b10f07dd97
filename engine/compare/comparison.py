"""One text, many tokenizers: where each cuts it, how many tokens, how well it compresses.

The rows of a comparison are ``SpanTokenizer``s (``engine.compare.baselines``): the character, byte
and word tokenizers, our byte-level BPE through ``BpeSpans``, our WordPiece through
``WordPieceSpans``, our Unigram through ``UnigramSpans``, SentencePiece's ``.model`` files
through ``SentencePieceSpans`` (optional package), and any other Hugging Face
``tokenizer.json`` (a WordPiece or Unigram one whose normalizer we cannot reproduce too)
through ``engine.compare.hf_models`` (optional package).

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
from typing import TYPE_CHECKING

from engine.compare.baselines import ByteTokenizer, CharacterTokenizer, SpanTokenizer, Token, WordTokenizer, byte_offsets
from engine.corpus.counting import count_file
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.words import count_file_words
from engine.encode.sentencepiece_model import SentencePieceModel
from engine.encode.tokenizer import Tokenizer
from engine.encode.unigram import SPACE, UnigramTokenizer, WordLattice
from engine.encode.wordpiece import WordPieceTokenizer
from engine.errors import CorpusError, ModelFileError
from engine.formats.rank_files import is_rank_file
from engine.train.trainer import Trainer
from engine.train.unigram import rule as unigram_rule
from engine.train.unigram.trainer import UnigramTrainer
from engine.train.wordpiece.rule import SPECIAL_TOKENS, base_vocab
from engine.train.wordpiece.trainer import WordPieceTrainer

if TYPE_CHECKING:
    from engine.encode.tokenizer import AnyTokenizer


class BpeSpans:
    """An ``engine.Tokenizer`` as a row: its ids, each token's bytes laid end to end."""

    kind = "BPE"

    def __init__(self, tokenizer: Tokenizer, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name
        self.vocab_size = len(tokenizer.vocab)  # tokens it holds, fewer than its largest id + 1 where ids skip some
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


class UnigramSpans:
    """A ``UnigramTokenizer`` as a row: each piece spans the bytes of the text it stands
    for, its ``▁`` the space (or run of spaces the normalizer made one) before its word, or
    nothing where ``Metaspace`` put it before the text; unknown characters next to each
    other, one ``<unk>``, span them all."""

    kind = "Unigram"

    def __init__(self, tokenizer: UnigramTokenizer, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name
        self.vocab_size = len(tokenizer.vocab)

    def tokenize(self, text: str) -> list[Token]:
        at = byte_offsets(text)
        tokens: list[Token] = []
        cursor = 0  # characters of the text consumed
        for lattice in self.tokenizer.encode_steps(text):
            if lattice.special:
                start = text.find(lattice.word, cursor)
                start = cursor if start < 0 else start
                cursor = start + len(lattice.word)
                tokens.append(Token(lattice.ids[0], at[start], at[cursor], lattice.word.encode("utf-8"), special=True))
                continue
            starts, cursor = self._characters(text, cursor, lattice.word)
            tokens += self._word_tokens(lattice, [at[k] for k in starts])
        return tokens

    def _characters(self, text: str, cursor: int, word: str) -> tuple[list[int], int]:
        """Where each character of ``word`` starts in ``text`` (the character offsets, one
        more for its end), its first found at ``cursor``; and the cursor after it."""
        starts = [cursor]
        if word.startswith(SPACE) and text.startswith(" ", cursor):
            cursor += 1
            while self.tokenizer.collapse_spaces and text.startswith(" ", cursor):
                cursor += 1
        elif word.startswith(SPACE) and text.startswith(SPACE, cursor):
            cursor += 1
        starts.append(cursor)  # a ▁ put before the text spans nothing
        for _ in word[1:]:
            cursor += 1
            starts.append(cursor)
        return starts, cursor

    def _word_tokens(self, lattice: WordLattice, offsets: list[int]) -> list[Token]:
        """The tokens of one word's best path: its pieces, unknown characters next to each
        other as one (``offsets``: the byte offset of each of the word's characters, and
        of its end)."""
        groups: list[tuple[int, int]] = []  # the best path's nodes as the ids' pieces: first and last character
        unknown = self.tokenizer.unk_id
        previous_unknown = False
        for k in lattice.best:
            node = lattice.nodes[k]
            if node.id == unknown and previous_unknown:
                groups[-1] = (groups[-1][0], node.end)
            else:
                groups.append((node.start, node.end))
            previous_unknown = node.id == unknown
        vocab = self.tokenizer.vocab
        return [
            Token(i, offsets[start], offsets[end], vocab[i][0].encode("utf-8"), unknown=i == unknown)
            for i, (start, end) in zip(lattice.ids, groups, strict=True)
        ]


class SentencePieceSpans:
    """A SentencePiece ``.model`` as a row: each piece spans the bytes ``sentencepiece`` says
    it covers (a byte piece, one byte of its character)."""

    def __init__(self, model: SentencePieceModel, name: str) -> None:
        self.model = model
        self.name = name
        self.kind = model.kind
        self.vocab_size = len(model.vocab)
        self._special = set(model.special_ids.values()) - {model.unk_id}

    def tokenize(self, text: str) -> list[Token]:
        vocab, unknown, special = self.model.vocab, self.model.unk_id, self._special
        return [
            Token(i, start, end, vocab[i].encode("utf-8"), unknown=i == unknown, special=i in special)
            for i, start, end in self.model.encode_spans(text)
        ]


def model_row(model: AnyTokenizer, name: str) -> SpanTokenizer:
    """A model ``Tokenizer.load`` opened, as a row of its kind."""
    if isinstance(model, WordPieceTokenizer):
        return WordPieceSpans(model, name)
    if isinstance(model, UnigramTokenizer):
        return UnigramSpans(model, name)
    if isinstance(model, SentencePieceModel):
        return SentencePieceSpans(model, name)
    return BpeSpans(model, name)


def load_span_tokenizer(path: str | os.PathLike[str], pattern: str | None = None) -> SpanTokenizer:
    """A model file as a row: what ``Tokenizer.load`` opens (byte-level BPE, rank files with
    ``pattern`` when they need one, WordPiece, Unigram, SentencePiece ``.model`` files)
    through our engine; any other ``tokenizer.json`` (a WordPiece or Unigram one whose
    normalizer we cannot reproduce, ...) through Hugging Face ``tokenizers``.
    ``ModelFileError`` in one line when neither can."""
    name = Path(path).name or str(path)
    if is_rank_file(path):  # named as tiktoken names its encodings: cl100k_base
        return BpeSpans(Tokenizer.from_tiktoken(path, pattern), name.removesuffix(".gz").removesuffix(".tiktoken"))
    try:
        model = Tokenizer.load(path)
    except ModelFileError as refusal:
        from engine.compare.hf_models import load_hf_json

        return load_hf_json(path, name, refusal)
    return model_row(model, name)


BPE_ROW = 3
"""Where ``corpus_tokenizers`` puts its BPE: the reference when no model is given."""


def corpus_tokenizers(
    corpus: str | os.PathLike[str],
    vocab_size: int = 1000,
    special_tokens: Sequence[str] = ("<|endoftext|>",),
    name: str | None = None,
    errors: str = "strict",
) -> list[SpanTokenizer]:
    """The lecture's ladder on one corpus: character, byte, word (the corpus's words), a BPE
    trained on the same pre-tokens up to ``vocab_size``, a WordPiece trained on the corpus's
    BERT words to the same size (where its alphabet alone is larger: its alphabet and as
    many merges as the BPE made), and a Unigram trained on its ``▁``-words to the same size
    (where its characters alone are more: its characters and as many pieces more as the BPE
    made merges). ``errors`` is how invalid UTF-8 in the corpus is read, as training takes it."""
    label = name or Path(corpus).name
    counts = count_file(corpus, PreTokenizer("gpt2", special_tokens), errors=errors)
    if not counts:
        raise CorpusError(f"{corpus}: no words to build a vocabulary from")
    trainer = Trainer(counts, vocab_size, special_tokens)
    trainer.run()
    words = count_file_words(corpus, "bert", errors=errors)
    alphabet = len(base_vocab(words, SPECIAL_TOKENS, sys.maxsize))
    wordpiece = WordPieceTrainer(words, vocab_size if vocab_size >= alphabet else alphabet + trainer.merges_done)
    wordpiece.run()
    unigram = _unigram(corpus, vocab_size, trainer.merges_done, errors)
    return [
        CharacterTokenizer(),
        ByteTokenizer(),
        WordTokenizer(counts, special_tokens, name=f"word ({label})"),
        BpeSpans(Tokenizer.from_trainer(trainer), f"BPE ({label})"),
        WordPieceSpans(WordPieceTokenizer.from_trainer(wordpiece), f"WordPiece ({label})"),
        UnigramSpans(UnigramTokenizer.from_trainer(unigram), f"Unigram ({label})"),
    ]


def _unigram(corpus: str | os.PathLike[str], vocab_size: int, merges: int, errors: str) -> UnigramTrainer:
    """Unigram trained on ``corpus`` to ``vocab_size``, or past it where its characters (every
    one kept) and ``<unk>`` need more room: by ``merges`` pieces."""
    words = unigram_rule.count_file_words(corpus, errors=errors)
    needed = len(unigram_rule.SPECIAL_TOKENS) + len(set().union(*words))
    trainer = UnigramTrainer(words, vocab_size if vocab_size >= needed else needed + merges)
    trainer.run()
    return trainer


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
