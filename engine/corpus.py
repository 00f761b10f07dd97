"""Reading a corpus: streamed in blocks, counted in parallel worker processes.

The file is read in binary blocks and decoded as UTF-8 (an invalid byte is reported with
its offset unless ``errors="replace"``). Each block is cut where a pre-token boundary is
certain (``PreTokenizer.safe_cut``), so
counting the blocks separately gives exactly the counts of the whole text, and memory
grows with the number of distinct pre-tokens rather than the file size.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from .errors import CorpusError, unreadable
from .pretokenize import PreTokenizer, SpaceParts, merge_counts

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

Progress = Callable[[str, int, int], None]
"""Progress callback: ``(phase, done, total)``; phase is "read" (bytes) or "merge" (merges)."""

MAX_BLOCK = 2 << 20
"""Largest block counted at once: its text and split parts are what a worker holds."""

PART_LIMIT = 1 << 18
"""Distinct space parts a counter holds before folding them into pre-token counts."""


def _utf8_tail(data: bytes) -> int:
    """Length of an incomplete UTF-8 sequence at the end of ``data`` (0 if none)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return back if back < need else 0
    return 0


def read_blocks(
    path: str | os.PathLike[str],
    pretok: PreTokenizer,
    block_size: int = MAX_BLOCK,
    errors: str = "strict",
) -> Iterator[tuple[str, int]]:
    """Yield ``(text, bytes_read_so_far)`` blocks that can be pre-tokenized independently."""
    offset = 0  # file offset of the first byte of ``pending``
    pending = b""
    carry = ""
    with _open(path) as f:
        while True:
            data = f.read(block_size)
            eof = not data
            raw = pending + data
            tail = 0 if eof else _utf8_tail(raw)
            body, pending = (raw[: len(raw) - tail], raw[len(raw) - tail :]) if tail else (raw, b"")
            try:
                text = carry + body.decode("utf-8", errors)
            except UnicodeDecodeError as e:
                raise CorpusError(
                    f"{path}: not valid UTF-8 at byte offset {offset + e.start} "
                    "(use --errors replace to train anyway)"
                ) from None
            offset += len(body)
            if eof:
                if text:
                    yield text, offset
                return
            cut = pretok.safe_cut(text)
            if cut:
                yield text[:cut], offset
                carry = text[cut:]
            else:
                carry = text


def _open(path: str | os.PathLike[str]) -> BinaryIO:
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CorpusError(unreadable(path, e)) from None
    if os.path.isdir(path):  # some systems open a directory without complaint
        f.close()
        raise CorpusError(unreadable(path, IsADirectoryError()))
    return f


def _heap_trimmer() -> Callable[[], object]:
    """glibc's ``malloc_trim(0)``, or nothing where there is none.

    Counting frees a block's text, its split parts and a result table for every block;
    glibc keeps such freed memory in its heaps (one per thread that touched it), so without
    a trim the processes' resident size grows with the file, not with the distinct
    pre-tokens.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    return lambda: trim(0)


_trim_heap = _heap_trimmer()

class _Tally:
    """Pre-token counts of the blocks seen so far, through a table of their space parts.

    The regex runs once per distinct part, not per block. The table is folded into
    pre-token counts whenever it outgrows ``PART_LIMIT``: parts can keep growing with the
    file (a number at every line end, say) where pre-tokens do not.
    """

    def __init__(self, pretok: PreTokenizer) -> None:
        self.pretok = pretok
        self.parts = SpaceParts()
        self.counts: Counter[bytes] = Counter()

    def add(self, text: str) -> None:
        self.pretok.count_parts(text, self.parts)
        if len(self.parts.firsts) + len(self.parts.rest) > PART_LIMIT:
            self._fold()

    def result(self) -> Counter[bytes]:
        self._fold()
        return self.counts

    def _fold(self) -> None:
        self.counts = merge_counts([self.counts, self.pretok.pretoken_counts(self.parts)])
        self.parts = SpaceParts()
        _trim_heap()


def _count_worker(pattern: str, special_tokens: tuple[str, ...], conn: Connection) -> None:
    """A counting process: tally every block it is sent, then send back the counts."""
    # Ctrl-C reaches the whole process group: the parent decides what it means, not workers.
    # SIGTERM (the parent giving up) just ends a worker, whatever handler it was forked with.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    tally = _Tally(PreTokenizer(pattern, special_tokens))
    while (text := conn.recv()) is not None:
        tally.add(text)
        del text
        _trim_heap()
    conn.send(tally.result())


def count_file(
    path: str | os.PathLike[str],
    pretok: PreTokenizer,
    workers: int | None = None,
    progress: Progress | None = None,
    errors: str = "strict",
    block_size: int | None = None,
) -> Counter[bytes]:
    """Pre-token counts of a corpus file, counted by ``workers`` processes (default: all cores)."""
    with _open(path) as f:  # a clear error now, before any worker starts
        total = os.fstat(f.fileno()).st_size
    workers = workers or os.cpu_count() or 1
    if block_size is None:
        # Several blocks per worker, so reading overlaps counting; bounded for memory.
        block_size = max(1 << 18, min(MAX_BLOCK, total // (4 * workers) + 1))
    report = progress or (lambda phase, done, total: None)
    report("read", 0, total)
    blocks = read_blocks(path, pretok, block_size, errors)
    if workers == 1 or total <= block_size:
        tally = _Tally(pretok)
        for text, done in blocks:
            tally.add(text)
            del text
            _trim_heap()
            report("read", done, total)
        return tally.result()
    return _count_parallel(path, blocks, pretok, workers, report, total)


def _count_parallel(
    path: str | os.PathLike[str],
    blocks: Iterator[tuple[str, int]],
    pretok: PreTokenizer,
    workers: int,
    report: Progress,
    total: int,
) -> Counter[bytes]:
    """Deal the blocks out to ``workers`` processes in turn; add up what they send back.

    Each worker keeps its part counts across all its blocks, so it runs the regex once per
    distinct part it saw rather than once per block. A send waits while that worker is
    still busy with its previous block, which keeps reading in step with counting.
    """
    import multiprocessing  # here: a small corpus, counted in this process, needs none of it

    # fork is fastest, but forking a process that runs other threads (the app) is unsafe.
    context = multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")
    conns: list[Connection] = []
    procs = []
    try:
        for _ in range(workers):
            conn, child_conn = context.Pipe()
            proc = context.Process(target=_count_worker, args=(pretok.pattern, pretok.special_tokens, child_conn), daemon=True)
            proc.start()
            child_conn.close()
            conns.append(conn)
            procs.append(proc)
        for i, (text, done) in enumerate(blocks):
            conns[i % workers].send(text)
            del text
            report("read", done, total)
        for conn in conns:
            conn.send(None)
        return merge_counts(conn.recv() for conn in conns)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        raise CorpusError(
            f"{path}: a worker process died while counting pre-tokens (out of memory or killed); "
            "try fewer --workers"
        ) from None
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
            proc.join()
