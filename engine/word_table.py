"""Pre-token counts packed into three flat buffers: the words' bytes one after another,
where each word ends, and each word's count.

A dict of 150,000 pre-tokens to their counts takes ~100 bytes per word in Python objects;
this takes the word's bytes plus 16. The trainer's core is built from these buffers (and
gives them back, to be rebuilt when going back), so the dict the counts came in can be freed
once it is built. Counting workers (local processes and Dask) send their counts
back this way too: a pickled dict costs its receiver a second dict while it is unpickled.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from itertools import accumulate


@dataclass(frozen=True, slots=True)
class WordTable:
    """Words and their counts, in the order they were given (the order the core lays them
    out, so a word's index here is its index in the core)."""

    words: bytes
    """Every word's bytes, one after another."""
    ends: array  # type: ignore[type-arg]
    """int64: where each word ends in ``words``."""
    counts: array  # type: ignore[type-arg]
    """int64: each word's count."""

    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int]) -> WordTable:
        """Pack a mapping of words to counts, keeping its order."""
        return cls(b"".join(counts), array("q", accumulate(map(len, counts))), array("q", counts.values()))

    def add_to(self, counts: MutableMapping[bytes, int]) -> None:
        """Add these counts into ``counts``."""
        get = counts.get
        for word, count in self.items():
            counts[word] = get(word, 0) + count

    def items(self) -> Iterator[tuple[bytes, int]]:
        """``(word, count)`` in order, like a dict's ``items()``."""
        words, start = self.words, 0
        for end, count in zip(self.ends, self.counts):
            yield words[start:end], count
            start = end
