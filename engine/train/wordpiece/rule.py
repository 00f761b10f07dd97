"""WordPiece's training rule, as both trainers apply it.

- words: ``BertPreTokenizer``'s words (``engine.corpus.words``), counted; lowercased first
  only if asked.
- symbols: a word is its first character, then ``##`` + each further character.
- alphabet: every symbol seen.
- score: ``count(a b) / (count(a) * count(b))``, the counts weighted by word frequency over
  the current segmentation, compared exactly (never as floats).
- choice: the highest score; ties go to the larger ``count(a b)``, then to the greater
  ``(a, b)`` by UTF-8 bytes.
- merge: the new token is ``a`` + ``b`` without its ``##``; it replaces every occurrence, left
  to right. A token already in the vocabulary adds no id (the pair still merges).
- stop: at the vocabulary size (special tokens included), or when no pair is left.
- ids: the special tokens, then the alphabet sorted by UTF-8 bytes, then each new token in
  the order it was made.

The score is the likelihood gain of the merge (似然): a pair scores high when its parts are
rarely seen apart, however rare the pair itself. BPE's rule, the largest ``count(a b)``,
favours pairs of common parts instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

from engine.errors import SettingsError, counted

PREFIX = "##"
"""Marks a symbol that continues a word."""
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
"""BERT's special tokens, in BERT's order: the default."""
UNKNOWN = "[UNK]"


def symbols(word: str) -> list[str]:
    """A word's starting symbols: ``hug`` is ``h ##u ##g``."""
    return [word[0], *(PREFIX + c for c in word[1:])] if word else []


def alphabet(words: Iterable[str]) -> list[str]:
    """Every symbol of every word, sorted by UTF-8 bytes."""
    return sorted({s for word in words for s in symbols(word)}, key=str.encode)


def joined(a: str, b: str) -> str:
    """The token a merge of ``a b`` makes: ``b`` always continues a word, so it drops its ``##``."""
    return a + b[len(PREFIX) :]


def score(pair_count: int, left_count: int, right_count: int) -> Fraction:
    """A pair's score, exactly."""
    return Fraction(pair_count, left_count * right_count)


def rule_key(a: str, b: str, pair_count: int, left_count: int, right_count: int) -> tuple[Fraction, int, bytes, bytes]:
    """The rule's order: the pair with the greatest key is merged."""
    return score(pair_count, left_count, right_count), pair_count, a.encode(), b.encode()


def base_vocab(words: Iterable[str], special_tokens: Sequence[str], vocab_size: int) -> list[str]:
    """The ids before any merge: the special tokens, then the alphabet. ``SettingsError``
    when ``vocab_size`` leaves no room for both, or a special token repeats."""
    if len(set(special_tokens)) != len(special_tokens):
        raise SettingsError("a special token is given twice")
    specials = set(special_tokens)
    vocab = [*special_tokens, *(s for s in alphabet(words) if s not in specials)]
    if vocab_size < len(vocab):
        letters = len(vocab) - len(special_tokens)
        raise SettingsError(
            f"vocab size {vocab_size:,} is below the {counted(len(special_tokens), 'special token')} and "
            f"{letters:,} symbols of this corpus's alphabet ({len(vocab):,})"
        )
    return vocab
