"""The plain WordPiece trainer: recount every symbol and pair before every merge.

The rule of ``engine.train.wordpiece.rule`` as written, with exact fractions; the optimized
``WordPieceTrainer`` must choose exactly the same merges.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

from engine.corpus.words import merge_symbols
from engine.train.wordpiece.rule import SPECIAL_TOKENS, base_vocab, joined, rule_key, symbols


def reference_wordpiece_merges(
    word_counts: Mapping[str, int], vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS
) -> Iterator[tuple[str, str]]:
    """Yield each merge as soon as it is found, recounting everything each time."""
    vocab = base_vocab(word_counts, special_tokens, vocab_size)
    known = set(vocab)
    words: Counter[tuple[str, ...]] = Counter()
    for text, count in word_counts.items():
        words[tuple(symbols(text))] += count
    while len(known) < vocab_size:
        pairs: Counter[tuple[str, str]] = Counter()
        singles: Counter[str] = Counter()
        for word, count in words.items():
            for s in word:
                singles[s] += count
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] += count
        if not pairs:
            return
        a, b = max(pairs, key=lambda p: rule_key(p[0], p[1], pairs[p], singles[p[0]], singles[p[1]]))
        new = joined(a, b)
        known.add(new)
        merged: Counter[tuple[str, ...]] = Counter()
        for word, count in words.items():
            merged[merge_symbols(word, a, b, new)] += count
        words = merged
        yield a, b


def train_wordpiece_reference(
    word_counts: Mapping[str, int], vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS
) -> tuple[list[str], list[tuple[str, str]]]:
    """Train from word counts; returns ``(vocab in id order, merges)``."""
    vocab = base_vocab(word_counts, special_tokens, vocab_size)
    merges = list(reference_wordpiece_merges(word_counts, vocab_size, special_tokens))
    known = set(vocab)
    for a, b in merges:
        if (new := joined(a, b)) not in known:
            known.add(new)
            vocab.append(new)
    return vocab, merges
