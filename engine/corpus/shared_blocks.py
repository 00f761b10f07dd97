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
        """``OSError`` if there is no room for them, in shared memory or the temporary folder."""
        self.path, self.map = _mapped_file(count * size)
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
        """The whole of ``slot``, to read a block into."""
        return memoryview(self.map)[slot * self.size : (slot + 1) * self.size]

    def unlink(self) -> None:
        """Remove the file's name: the mappings stay, and the memory goes with the last."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """No more slots to take, and the file's name removed."""
        self._closed = True
        self.unlink()


def _mapped_file(size: int) -> tuple[str, mmap.mmap]:
    """A new file of ``size`` bytes, in ``/dev/shm`` if it has room, else in the temporary
    folder, and its mapping."""
    if os.path.isdir(SHM):
        try:
            return _mapped_in(SHM, size)
        except OSError:
            pass
    return _mapped_in(tempfile.gettempdir(), size)


def _mapped_in(folder: str, size: int) -> tuple[str, mmap.mmap]:
    """A new file of ``size`` bytes in ``folder``, and its mapping; ``OSError`` (and no file)
    if there is no room for it."""
    fd, path = tempfile.mkstemp(prefix="bpe-tui-stream-", dir=folder)
    try:
        _reserve(fd, size)
        return path, mmap.mmap(fd, size)
    except OSError:
        os.unlink(path)
        raise
    finally:
        os.close(fd)


def _reserve(fd: int, size: int) -> None:
    """Make the file ``size`` bytes long, its room taken now where the system can: a page
    written past the room a small ``/dev/shm`` has (64 MB in a container) would kill the
    process, where this fails with ``OSError``."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)
    else:
        os.ftruncate(fd, size)


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
