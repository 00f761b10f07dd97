"""A stream's blocks in memory that the counting processes share.

A stream is read by one process (no other can read it) and counted by all of them. Handed on
through a queue, each block is copied five times on its way (joined from what the pipe
delivered, pickled, written to a pipe, read from it, unpickled), in memory faulted in afresh
each time. Here the reading process reads each block straight into a slot of a file in shared
memory (``/dev/shm`` where there is one), every counter maps that file, and only the slot's
number and the block's length go through the queue; a slot is taken again once its block is
counted.
"""

from __future__ import annotations

import mmap
import os
import queue
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

SHM = "/dev/shm"


class SharedBlocks:
    """``count`` slots of ``size`` bytes in a file made for them, mapped here: the reading
    process's side. Counters map it by ``path`` (``attach``)."""

    def __init__(self, count: int, size: int) -> None:
        fd, self.path = tempfile.mkstemp(prefix="bpe-tui-stream-", dir=SHM if os.path.isdir(SHM) else None)
        try:
            os.ftruncate(fd, count * size)
            self.map = mmap.mmap(fd, count * size)
        except OSError:
            os.unlink(self.path)
            raise
        finally:
            os.close(fd)
        self.size = size
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        for slot in range(count):
            self._free.put(slot)
        self._closed = False

    def take(self) -> int:
        """A free slot, once one is (``BlocksClosed`` once ``close`` is called)."""
        while not self._closed:
            try:
                return self._free.get(timeout=0.1)
            except queue.Empty:
                continue
        raise BlocksClosed

    def give(self, slot: int) -> None:
        """Give back ``slot``: its block is counted."""
        self._free.put(slot)

    def slot(self, slot: int) -> memoryview:
        return memoryview(self.map)[slot * self.size : (slot + 1) * self.size]

    def close(self) -> None:
        """Remove the file; the memory goes with the last mapping (a counter's may outlive this)."""
        self._closed = True
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class BlocksClosed(Exception):
    """Raised to a reader waiting for a slot once counting stops."""


def attach(path: str) -> mmap.mmap:
    """The slots of ``SharedBlocks`` at ``path``, mapped read-only in a counting process."""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


@contextmanager
def shared_block(mapped: mmap.mmap, size: int, slot: int, length: int) -> Iterator[memoryview]:
    """The block of ``length`` bytes in ``slot`` (of ``size`` bytes) of the slots ``mapped``,
    let go after: a mapping cannot close while a view of it is held."""
    view = memoryview(mapped)[slot * size : slot * size + length]
    try:
        yield view
    finally:
        view.release()
