"""The tokenizers before BPE (seed lecture 003): character, byte and word.

Each cuts a text into tokens and says which span of the text each one covers, through the
small interface the comparison works with (``SpanTokenizer``):

- ``CharacterTokenizer``: one token per Unicode code point, its id ``ord(ch)``: no unknown
  tokens, but a vocabulary of every code point and about one token per character.
- ``ByteTokenizer``: one token per UTF-8 byte: 256 ids, and the worst compression, exactly
  1.00 bytes per token.
- ``WordTokenizer``: the GPT-2 regex's pre-tokens as words, a vocabulary of the words seen
  in a corpus; any other word is the unknown token.

Spans are UTF-8 byte offsets, so a token that is only part of a character (a byte of 你)
has one too. For these three, and for byte-level BPE, the spans cover the text exactly.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import NamedTuple, Protocol

from engine.corpus.pretokenize import PreTokenizer


class Token(NamedTuple):
    """One token of a tokenized text (a tuple: a 10 KB text makes ten thousand)."""

    id: int
    start: int
    """UTF-8 byte offset in the text where the token starts."""
    end: int
    """UTF-8 byte offset where it ends (exclusive)."""
    piece: bytes
    """The vocabulary entry: for byte-level tokenizers exactly the bytes covered; for others
    the entry's own text (WordPiece's ``##ing``, Unigram's ``▁the``, ``[UNK]``)."""
    unknown: bool = False
    """Not in the vocabulary: the tokenizer gave its unknown id."""
    special: bool = False
    """A special token (``<|endoftext|>``), matched whole before anything else."""


class SpanTokenizer(Protocol):
    """What every tokenizer in a comparison offers."""

    name: str
    """What to call it on screen (``word (sample.txt)``, a model's file name)."""
    kind: str
    """The algorithm: ``character``, ``byte``, ``word``, ``BPE``, ``WordPiece``, ``Unigram``..."""
    vocab_size: int

    def tokenize(self, text: str) -> list[Token]:
        """The tokens of ``text`` in order, with their spans."""
        ...


def byte_offsets(text: str) -> list[int]:
    """The UTF-8 byte offset of every character boundary: ``len(text) + 1`` entries."""
    return [0, *accumulate(1 if c < "\x80" else 2 if c < "\u0800" else 3 if c < "\U00010000" else 4 for c in text)]


class CharacterTokenizer:
    """One token per code point, its id the code point (``ord``)."""

    name = "character"
    kind = "character"
    vocab_size = sys.maxunicode + 1

    def tokenize(self, text: str) -> list[Token]:
        offsets = byte_offsets(text)
        return [Token(ord(c), start, end, c.encode("utf-8")) for c, start, end in zip(text, offsets, offsets[1:], strict=False)]


class ByteTokenizer:
    """One token per UTF-8 byte, its id the byte's value."""

    name = "byte"
    kind = "byte"
    vocab_size = 256

    def tokenize(self, text: str) -> list[Token]:
        return [Token(b, i, i + 1, bytes((b,))) for i, b in enumerate(text.encode("utf-8"))]


class WordTokenizer:
    """Words are pre-tokens of the GPT-2 regex (`` world``, ``!``, ``你好``), each word seen in
    the corpus an id; any other word is the unknown token.

    Ids: 0 is the unknown token, then the special tokens, then the words from the most
    frequent down (ties in byte order). A word's leading space is part of it, as in GPT-2.
    """

    UNKNOWN = "<unk>"

    def __init__(
        self,
        word_counts: Mapping[bytes, int],
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        name: str = "word",
    ) -> None:
        self.name = name
        self.kind = "word"
        self.pretokenizer = PreTokenizer(pattern, special_tokens)
        specials = list(dict.fromkeys(special_tokens))
        words = sorted(word_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.words = [self.UNKNOWN, *specials, *(w.decode("utf-8", errors="replace") for w, _ in words)]
        """Id -> word."""
        self.ids = {word: i for i, word in enumerate(self.words) if i}
        self.special_ids = {s: self.ids[s] for s in specials}
        self.vocab_size = len(self.words)

    @classmethod
    def from_text(cls, corpus: str, special_tokens: Sequence[str] = (), pattern: str = "gpt2", name: str = "word") -> WordTokenizer:
        """The vocabulary of the words in ``corpus``."""
        return cls(PreTokenizer(pattern, special_tokens).count(corpus), special_tokens, pattern, name)

    def tokenize(self, text: str) -> list[Token]:
        tokens: list[Token] = []
        start = 0
        for piece, special in self.pretokenizer.split_special(text):
            for word in [piece] if special else self.pretokenizer.pretokens(piece):
                raw = word.encode("utf-8")
                end = start + len(raw)
                i = self.ids.get(word, 0)
                if special:
                    tokens.append(Token(i, start, end, raw, special=True))
                else:
                    tokens.append(Token(i, start, end, raw, unknown=not i))
                start = end
        return tokens
