"""Pre-token counts packed into three flat buffers: the words' bytes one after another,
where each word ends, and each word's count.

A dict of 150,000 pre-tokens to their counts takes ~100 bytes per word in Python objects;
this takes the word's bytes plus 16. Counting for training ends in these, and never builds
that dict: local workers each hand back their part of the pre-tokens, sorted
(``engine.corpus.tally_parts``), laid out one after another (``concat``); Dask workers and
runs on disk give sorted tables, merged in C (``merged``, ``merge``). The trainer's core is
built from the buffers (and gives them back, to be rebuilt when going back).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, pairwise

from engine.corpus._tally import concat_tables, merge_tables


@dataclass(frozen=True, slots=True)
class WordTable:
    """Words and their counts, in the order they were given (the order the core lays them
    out, so a word's index here is its index in the core)."""

    words: bytes | memoryview
    """Every word's bytes, one after another."""
    ends: array | memoryview  # type: ignore[type-arg]
    """int64: where each word ends in ``words``."""
    counts: array | memoryview  # type: ignore[type-arg]
    """int64: each word's count.

    A table is made of bytes and arrays, or of views of a file mapped in memory (a part
    another process counted: ``engine.corpus.tally_parts.read_part``)."""

    @classmethod
    def from_counts(cls, counts: Mapping[bytes, int]) -> WordTable:
        """Pack a mapping of words to counts, keeping its order."""
        return cls(b"".join(counts), array("q", accumulate(map(len, counts))), array("q", counts.values()))

    @classmethod
    def packed(cls, words: bytes, ends: bytes, counts: bytes) -> WordTable:
        """A table from its buffers as bytes, ends and counts native int64 (a ``Tally``'s)."""
        ends_array, counts_array = array("q"), array("q")
        ends_array.frombytes(ends)
        counts_array.frombytes(counts)
        return cls(words, ends_array, counts_array)

    @classmethod
    def sorted(cls, counts: Mapping[bytes, int]) -> WordTable:
        """Pack a mapping of words to counts in sorted order of the words (as ``merged`` needs)."""
        words = sorted(counts)
        return cls(b"".join(words), array("q", accumulate(map(len, words))), array("q", map(counts.__getitem__, words)))

    def merged(self, other: WordTable) -> WordTable:
        """The sum of two tables sorted by word, sorted by word."""
        return WordTable.merge([self, other])

    @classmethod
    def merge(cls, tables: Sequence[WordTable]) -> WordTable:
        """The sum of tables sorted by word, sorted by word: one pass over them all in C
        (``merge_tables``), written straight into the new buffers (no dict, no list of words)."""
        return cls.packed(*merge_tables([(t.words, t.ends, t.counts) for t in tables]))

    @classmethod
    def concat(cls, tables: Sequence[WordTable]) -> WordTable:
        """Tables that share no word, one after another as one (``concat_tables``)."""
        if len(tables) == 1:
            return tables[0]
        return cls.packed(*concat_tables([(t.words, t.ends, t.counts) for t in tables]))

    def by_word(self) -> WordTable:
        """This table sorted by word (itself, if it is)."""
        items = list(self.items())
        if all(a[0] < b[0] for a, b in pairwise(items)):
            return self
        return WordTable.sorted(dict(items))

    def __len__(self) -> int:
        return len(self.counts)

    def counter(self) -> Counter[bytes]:
        """The counts as a ``Counter``."""
        return Counter(dict(self.items()))

    def items(self) -> Iterator[tuple[bytes, int]]:
        """``(word, count)`` in order, like a dict's ``items()``."""
        words, start = self.words, 0
        for end, count in zip(self.ends, self.counts, strict=True):
            yield bytes(words[start:end]), count
            start = end


@dataclass(frozen=True, slots=True)
class TableParts:
    """Tables to be read one after another, and at most how many words and bytes of words
    they hold together, known before any is read (a counts file's header, the runs to be
    joined): the trainer makes room for them all at once (``Core.reserve``)."""

    tables: Iterator[WordTable]
    words: int
    words_bytes: int

    def __iter__(self) -> Iterator[WordTable]:
        return self.tables
