"""The plain reference trainer: recount every pair before every merge.

Obviously correct and slow (seed lecture 003's naive BPE on byte-level pre-tokens); the
optimized ``Trainer`` must produce exactly the same merges, and benchmarks show the gap.
``reference_merges`` finds the merges one at a time (so a race can watch it work);
``train_reference`` collects them into ``(vocab, merges)``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

from engine.corpus.words import merge_symbols
from engine.train.trainer import check_settings


def reference_merges(
    word_counts: Mapping[bytes, int],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
) -> Iterator[tuple[bytes, bytes]]:
    """Yield each merge, as a pair of byte strings, as soon as it is found.

    Every step recounts the pairs of every word and rewrites every word: the cost the
    optimized trainer avoids. Ends at ``vocab_size`` or when no pair is left.
    """
    check_settings(vocab_size, special_tokens)
    vocab = base_vocab(special_tokens)
    words = {tuple(word): count for word, count in word_counts.items()}
    while len(vocab) < vocab_size:
        pairs: Counter[tuple[int, int]] = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] += count
        if not pairs:
            return
        a, b = max(pairs, key=lambda p: (pairs[p], (vocab[p[0]], vocab[p[1]])))
        new = len(vocab)
        vocab.append(vocab[a] + vocab[b])
        yield vocab[a], vocab[b]
        words = {merge_symbols(word, a, b, new): count for word, count in words.items()}


def train_reference(
    word_counts: Mapping[bytes, int],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train from pre-token counts; returns ``(vocab, merges)`` like ``train_bpe``."""
    merges = list(reference_merges(word_counts, vocab_size, special_tokens))
    vocab = base_vocab(special_tokens) + [a + b for a, b in merges]
    return dict(enumerate(vocab)), merges


def base_vocab(special_tokens: Sequence[str]) -> list[bytes]:
    """The tokens before any merge: the 256 bytes, then the special tokens."""
    return [bytes([i]) for i in range(256)] + [s.encode("utf-8") for s in special_tokens]
