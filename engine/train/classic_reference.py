"""The plain classic BPE trainer: recount every symbol pair before every merge.

Seed lectures 004 and 002 as written: each word becomes its characters plus ``</w>``, the
pair counts are recounted over all words, and ``max(pairs, key=pairs.get)`` picks the most
frequent pair, the first seen on a tie (words in first-seen order, pairs left to right).
The optimized ``ClassicTrainer`` must produce exactly the same merges.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.corpus.words import merge_symbols
from engine.train.classic import END_OF_WORD, alphabet, merges_for, symbols


def train_classic_reference(
    word_counts: Mapping[str, int], vocab_size: int, end_of_word: str | None = END_OF_WORD
) -> tuple[list[str], list[tuple[str, str]]]:
    """Train from word counts (in first-seen order); returns ``(vocab, merges)``."""
    words = {tuple(symbols(word, end_of_word)): count for word, count in word_counts.items()}
    vocab = alphabet(word_counts, end_of_word)
    merges: list[tuple[str, str]] = []
    for _ in range(merges_for(vocab_size, vocab)):
        pairs: dict[tuple[str, str], int] = {}
        for word, count in words.items():
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] = pairs.get(pair, 0) + count
        if not pairs:
            break
        a, b = max(pairs, key=pairs.__getitem__)
        merges.append((a, b))
        if a + b not in vocab:
            vocab.append(a + b)
        words = {merge_symbols(word, a, b, a + b): count for word, count in words.items()}
    return vocab, merges
