"""Counters' tallies joined by hash: how the counts of parallel counters become one.

Each of ``n`` counters splits its tally into ``n`` parts by the low bits of each pre-token's
hash (``Tally.write_parts``), the same for every tally, so that part ``p`` of one tally shares
no pre-token with the other parts of another. Counter ``p`` then adds part ``p`` of every
other counter to its own tally (``join``) and writes out only its part ``p``, sorted
(``write_own``).
The ``n`` parts that come back hold each pre-token once: they are the counts, one part after
another, and no one process sorts, merges or hashes them all again. Each counter only adds
what the others saw of its part, on its own core.

A part goes between processes as a file: a header (words, bytes of words, as two int64)
then what ``Tally.write_parts`` writes (the words' ends, their counts, their bytes).
"""

from __future__ import annotations

import mmap
import os
import struct
from array import array
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from engine.corpus._tally import Tally
from engine.corpus.word_table import WordTable

HEADER = struct.Struct("<qq")


def part_path(folder: str, counter: int, part: int | None = None) -> str:
    """Where counter ``counter`` writes part ``part`` for another counter to join, or (None)
    its own joined part."""
    return os.path.join(folder, f"{counter}.part" if part is None else f"{counter}-{part}.part")


def write_parts(tally: Tally, paths: Sequence[str | None], sort: bool = False) -> None:
    """Write the tally's ``len(paths)`` parts to ``paths`` (None: not written), in the order
    first seen or ``sort``ed."""
    with ExitStack() as stack:
        files = [None if path is None else stack.enter_context(open(path, "wb")) for path in paths]
        for f in files:
            if f is not None:
                f.seek(HEADER.size)
        sizes = tally.write_parts([None if f is None else f.fileno() for f in files], sort)
        for f, size in zip(files, sizes, strict=True):
            if f is not None:
                os.pwrite(f.fileno(), HEADER.pack(*size), 0)


def join(tally: Tally, paths: Sequence[str]) -> None:
    """Add to the tally the parts other counters wrote to ``paths``, each let go once added."""
    for path in paths:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > HEADER.size:
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data, memoryview(data) as view:
                    n, length = HEADER.unpack_from(view)
                    ends_at, words_at = HEADER.size + 8 * n, HEADER.size + 16 * n
                    tally.add_table(view[words_at : words_at + length], view[HEADER.size : ends_at], view[ends_at:words_at])
        Path(path).unlink()


def write_own(tally: Tally, folder: str, counter: int, counters: int) -> None:
    """Write the counter's own part, joined, sorted: what it hands back. The merge loop runs
    faster over words laid out in order (similar words near each other: 12.0 s against 9.5
    s on the 1 GB synthetic corpus @ 32,000), and each counter sorts its own part."""
    write_parts(tally, [part_path(folder, counter) if p == counter else None for p in range(counters)], sort=True)


def read_part(path: str) -> WordTable:
    """A joined part, as a table of views of the file mapped in memory, not copied (the
    file's name goes at once; its pages when the table does)."""
    with open(path, "rb") as f:
        n, length = HEADER.unpack(f.read(HEADER.size))
        if not n:
            Path(path).unlink()
            return WordTable(b"", array("q"), array("q"))
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    Path(path).unlink()
    view = memoryview(data)
    ends_at, words_at = HEADER.size + 8 * n, HEADER.size + 16 * n
    return WordTable(view[words_at : words_at + length], view[HEADER.size : ends_at].cast("q"), view[ends_at:words_at].cast("q"))
