"""Reading a corpus: streamed in blocks, counted here or by parallel worker processes.

The file is read in binary blocks and decoded as UTF-8 (an invalid byte is reported with
its offset unless ``errors="replace"``). Each block is cut where a pre-token boundary is
certain (``PreTokenizer.safe_cut``), so counting the blocks separately gives exactly the
counts of the whole text, and memory grows with the number of distinct pre-tokens rather
than the file size. A file above ``IN_PROCESS`` bytes is counted by workers, each taking
blocks from a queue as it is free.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from .errors import CorpusError, unreadable
from .pretokenize import PreTokenizer, merge_counts

if TYPE_CHECKING:
    from multiprocessing import Queue

Progress = Callable[[str, int, int], None]
"""Progress callback: ``(phase, done, total)``; phase is "read" (bytes) or "merge" (merges)."""

MAX_BLOCK = 2 << 20
"""Largest block counted at once: its text and split parts are what a worker holds."""

IN_PROCESS = 16 << 20
"""Files up to this size are counted in this process: below it, starting workers and
merging their results costs more than they save."""

MAX_PARTS = 1 << 18
"""Distinct parts a process tallies before turning them into pre-token counts: bounds its
memory on a big file."""


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
    with open_corpus(path) as f:
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


def open_corpus(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a corpus file in binary mode; ``CorpusError`` in one line if it cannot be."""
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


def count_file(
    path: str | os.PathLike[str],
    pretok: PreTokenizer,
    workers: int | None = None,
    progress: Progress | None = None,
    errors: str = "strict",
    block_size: int | None = None,
) -> Counter[bytes]:
    """Pre-token counts of a corpus file, counted by ``workers`` processes (default: all cores)."""
    with open_corpus(path) as f:  # a clear error now, before any worker starts
        total = os.fstat(f.fileno()).st_size
    workers = workers or os.cpu_count() or 1
    if block_size is None:
        # At least two blocks per worker, so reading overlaps counting; bounded for memory.
        block_size = max(1 << 18, min(MAX_BLOCK, total // (2 * workers) + 1))
    report = progress or (lambda phase, done, total: None)
    report("read", 0, total)
    blocks = read_blocks(path, pretok, block_size, errors)
    if workers == 1 or total <= IN_PROCESS:
        return _count_texts(_reporting(blocks, report, total), pretok)
    return _count_parallel(path, blocks, pretok, workers, lambda done: report("read", done, total))


def _reporting(blocks: Iterator[tuple[str, int]], report: Progress, total: int) -> Iterator[str]:
    """The blocks' texts, reporting the bytes read once each block is counted."""
    for text, done in blocks:
        yield text
        report("read", done, total)


def _count_texts(texts: Iterable[str], pretok: PreTokenizer) -> Counter[bytes]:
    """Count consecutive blocks: their parts are tallied together, so the regex runs once
    per distinct part, until there are ``MAX_PARTS`` of them to turn into counts."""
    counts: Counter[bytes] = Counter()
    bare: dict[str, int] = {}
    spaced: dict[str, int] = {}
    for text in texts:
        pretok.count_parts(text, bare, spaced)
        del text
        if not pretok.chunked or len(bare) + len(spaced) > MAX_PARTS:
            counts = merge_counts([counts, pretok.resolve(bare, spaced)])
            bare.clear()
            spaced.clear()
        _trim_heap()
    return merge_counts([counts, pretok.resolve(bare, spaced)])


def _count_parallel(
    path: str | os.PathLike[str],
    blocks: Iterator[tuple[str, int]],
    pretok: PreTokenizer,
    workers: int,
    read_to: Callable[[int], None],
) -> Counter[bytes]:
    """Hand the blocks to ``workers`` processes through one bounded queue; each counts
    what it gets as ``_count_texts`` does and sends back one table at the end."""
    # Imported here: a small corpus, counted in this process, need not pay for them.
    import multiprocessing
    import queue

    # fork is fastest, but forking a process that runs other threads (the app) is unsafe.
    context = multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")
    tasks = context.Queue(2 * workers)  # bounds memory: a few blocks in flight
    results = context.Queue()
    procs = [
        context.Process(  # type: ignore[attr-defined]  # every concrete context has it
            target=_worker, args=(pretok.pattern, pretok.special_tokens, tasks, results), daemon=True
        )
        for _ in range(workers)
    ]

    def check() -> None:
        if any(p.exitcode for p in procs):
            raise CorpusError(
                f"{path}: a worker process died while counting pre-tokens (out of memory or killed); "
                "try fewer --workers"
            )

    def put(task: str | None) -> None:
        while True:
            try:
                return tasks.put(task, timeout=0.1)
            except queue.Full:
                check()

    finished = False
    try:
        for p in procs:
            p.start()
        for text, done in blocks:
            put(text)
            del text
            read_to(done)
            _trim_heap()  # the blocks passed on leave freed memory behind in this process too
        for _ in procs:
            put(None)
        result: Counter[bytes] = Counter()
        for _ in procs:
            while True:
                try:
                    result = merge_counts([result, results.get(timeout=0.1)])
                    break
                except queue.Empty:
                    check()
        finished = True
        return result
    finally:
        for p in procs:
            if p.pid is not None:
                p.terminate()  # a no-op for one that has finished
                p.join()
        if not finished:
            tasks.cancel_join_thread()  # blocks no worker will take must not hold up exit
        for q in (tasks, results):
            q.close()
            q.join_thread()  # no queue thread left behind: a later fork would copy it


def _worker(pattern: str, special_tokens: tuple[str, ...], tasks: Queue[str | None], results: Queue[Counter[bytes]]) -> None:
    # Ctrl-C reaches the whole process group: the parent decides what it means, not workers.
    # SIGTERM (the parent cleaning up) just ends a worker, whatever handler it was forked with.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    results.put(_count_texts(iter(tasks.get, None), PreTokenizer(pattern, special_tokens)))
