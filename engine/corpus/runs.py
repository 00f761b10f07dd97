"""Counts kept on disk as counting goes: sorted runs, so that a count can stop and go on
where it stopped, and can stay within a memory budget.

A counter (the counting process, or a worker) that keeps its counts writes its tally out
sorted by pre-token (a *run*) and starts an empty one: when the tally outgrows its budget,
and, for a count that can go on, at the end of a shard once ``every`` seconds have passed
since its last run; and always when it has no shard left. The runs are joined at the end by
one k-way merge (``WordTable.merge``), so a pre-token seen by several counters, or before and
after a spill, is counted once with its whole count: the same table as counting in memory.

A run's header names its *plan* (a digest of the settings and of every shard: its file's
path, size and time of change, and its byte range), the shards wholly counted into the
counter's runs up to it (``done``, each with its ``ShardCount`` but the counts), and the shard
it holds only part of (``partial``: written mid-shard). A run belongs to the count when the
shard it holds part of is done by another such run: a count stopped mid-shard leaves runs
that do not, and they are deleted when the count goes on, with the shards they held
(:func:`kept_runs`). Runs of another plan (the files changed, other settings) are deleted too.

The file: one line of JSON, then the ends and the counts (native int64) and the pre-tokens'
bytes, read back through ``mmap`` with no copy. Written to a temporary name and renamed: a
run is whole or absent.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from engine.corpus._tally import TableMerge, merge_tables
from engine.corpus.shards import CountSettings, PretokenTally, Shard, ShardCount, trim_heap
from engine.corpus.word_table import TableParts, WordTable
from engine.errors import CorpusError

FORMAT = "bpe-tui count run"
VERSION = 1
SUFFIX = ".run"


@dataclass(frozen=True, slots=True)
class Keeping:
    """How a counter keeps its counts on disk: in ``folder``, under ``plan``; a run when its
    tally holds more than ``budget`` bytes (None: no limit), and at a shard's end once
    ``every`` seconds have passed since the last (None: only then and at the end)."""

    folder: str
    plan: str
    budget: int | None = None
    every: float | None = None


def _stamp(path: str) -> tuple[int, int]:
    """A file's size and time of change; for a path with a protocol (read through fsspec),
    nothing to tell a change by."""
    try:
        st = os.stat(path)
    except OSError:
        return -1, -1
    return st.st_size, st.st_mtime_ns


def plan_digest(shards: Sequence[Shard], settings: CountSettings) -> str:
    """What a count is of: the settings that change counts and every shard, with its file's
    size and time of change, so that runs of other files or settings are not taken for it."""
    files = {s.path: _stamp(s.path) for s in shards if not s.stream}
    counted_as = [repr(settings.pattern), repr(settings.special_tokens), settings.text_field, settings.errors, settings.skip_bad_records]
    plan = {
        "settings": counted_as,
        "shards": [[s.path, s.format, s.compression, s.start, s.end, s.row_group, *files[s.path]] for s in shards if not s.stream],
    }
    return hashlib.blake2b(json.dumps(plan).encode(), digest_size=16).hexdigest()


Views = tuple[memoryview, memoryview, memoryview]
"""A table's words, ends and counts, read through a map."""


@dataclass(slots=True)
class Run:
    """A run read back: its header and its table, over the file's ``mmap``."""

    path: Path
    done: dict[int, ShardCount]
    partial: int | None
    table: Views = field(repr=False)
    pages: mmap.mmap | None = field(default=None, repr=False)
    """The map the table is read through (None for an empty run), its header ``at`` bytes."""
    at: int = 0

    def let_go(self, nbytes: int, nwords: int) -> None:
        """Let go of the pages of the first ``nwords`` words (``nbytes`` of their bytes), read
        already: a merge of runs as large as memory holds only what it reads now (they are
        read again from the file if touched)."""
        if self.pages is None:
            return
        n = len(self.table[1]) // 8
        for start, length in ((self.at, 8 * nwords), (self.at + 8 * n, 8 * nwords), (self.at + 16 * n, nbytes)):
            first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
            end = (start + length) // mmap.PAGESIZE * mmap.PAGESIZE
            if end > first:
                self.pages.madvise(mmap.MADV_DONTNEED, first, end - first)


def write_run(keeping: Keeping, tally: PretokenTally, done: dict[int, ShardCount], partial: int | None) -> Path:
    """Write ``tally`` sorted, with the shards it holds, as a new run in the folder; the tally
    counts no more after (``Tally.write_sorted``: a new one counts on)."""
    header = {
        "format": FORMAT,
        "version": VERSION,
        "plan": keeping.plan,
        "done": [[i, r.bytes_read, r.bad_records, r.digest.hex()] for i, r in sorted(done.items())],
        "partial": partial,
        "n": len(tally.tally),
        "words": tally.tally.words_bytes,
    }
    folder = Path(keeping.folder)
    path = folder / f"{time.time_ns():020d}-{os.getpid()}{SUFFIX}"
    part = path.with_suffix(".part")
    try:
        with open(part, "wb") as f:
            f.write(json.dumps(header).encode() + b"\n")
            f.flush()
            tally.tally.write_sorted(f.fileno())
            os.fsync(f.fileno())
        os.replace(part, path)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise CorpusError(f"{folder}: cannot keep counts there ({e.strerror or e})") from None
    return path


def _read(path: Path, stack: ExitStack) -> tuple[dict[str, object], Views, mmap.mmap | None, int] | None:
    """A run's header, its table, the map it is read through and where the table starts in
    it; or None when the file is no whole run."""
    with open(path, "rb") as f:
        line = f.readline(1 << 20)
        try:
            header = json.loads(line)
        except ValueError:
            return None
        if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") != VERSION:
            return None
        n, size = header.get("n"), header.get("words")
        if not isinstance(n, int) or not isinstance(size, int) or os.fstat(f.fileno()).st_size != len(line) + 16 * n + size:
            return None
        if n == 0:
            return header, (memoryview(b""), memoryview(b""), memoryview(b"")), None, 0
        pages = stack.enter_context(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
        view = memoryview(pages)
    at = len(line)
    table = (view[at + 16 * n :], view[at : at + 8 * n], view[at + 8 * n : at + 16 * n])
    for part in (view, *table):  # released before the map closes, which they point into
        stack.callback(part.release)
    return header, table, pages, at


def holds_runs(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a whole run: a stopped count left something to go on from."""
    return any(Path(folder).glob(f"*{SUFFIX}"))


def kept_runs(folder: str | os.PathLike[str], plan: str, stack: ExitStack) -> list[Run]:
    """The runs in ``folder`` that belong to a count of ``plan``, their maps held open by
    ``stack``; every other run there is deleted (another plan's, one whose shard was left
    part-counted, a file cut short), and so is a half-written one."""
    runs: list[Run] = []
    for path in sorted(Path(folder).glob(f"*{SUFFIX}")):
        got = _read(path, stack)
        if got is None or got[0].get("plan") != plan:
            path.unlink()
            continue
        header, table, pages, at = got
        done_list = header.get("done")
        partial = header.get("partial")
        if not isinstance(done_list, list) or not (partial is None or isinstance(partial, int)):
            path.unlink()
            continue
        done = {int(i): ShardCount(Counter(), int(read), int(bad), bytes.fromhex(digest)) for i, read, bad, digest in done_list}
        runs.append(Run(path, done, partial, table, pages, at))
    while True:  # a run holding part of a shard no run finished goes, and the shards it finished with it
        finished = {i for run in runs for i in run.done}
        left = [run for run in runs if run.partial is None or run.partial in finished]
        if len(left) == len(runs):
            break
        runs = left
    for path in Path(folder).glob("*"):
        if path.suffix == ".part" or (path.suffix == SUFFIX and path not in {run.path for run in runs}):
            path.unlink()
    return runs


class RunKeeper:
    """One counter's runs: told when a shard starts and ends, it writes the tally out as
    ``keeping`` says and starts an empty one."""

    def __init__(self, keeping: Keeping, tally: PretokenTally) -> None:
        self.keeping = keeping
        self.tally = tally
        self.done: dict[int, ShardCount] = {}
        self.current: int | None = None
        self.last = time.monotonic()
        if keeping.budget is not None:
            tally.spill_over(keeping.budget, self._spilled)

    def _write(self, partial: int | None) -> None:
        if len(self.tally.tally) or self.done:
            write_run(self.keeping, self.tally, self.done, partial)
        self.done = {}
        self.tally.reset()
        self.last = time.monotonic()

    def _spilled(self) -> None:
        """The tally outgrew its budget: out it goes, mid-shard."""
        self._write(self.current)

    def started(self, index: int) -> None:
        self.current = index

    def finished(self, index: int, result: ShardCount) -> None:
        self.done[index] = result
        self.current = None
        if self.keeping.every is not None and time.monotonic() - self.last >= self.keeping.every:
            self._write(None)

    def close(self) -> None:
        """No shard left: what the tally holds goes out."""
        self._write(None)
        trim_heap()


def merged_runs(runs: Sequence[Run]) -> WordTable:
    """The sum of the runs, sorted by pre-token."""
    return WordTable.packed(*merge_tables([run.table for run in runs]))


PART_BYTES = 16 << 20
"""The pre-tokens' bytes ``merged_parts`` joins at a time (at most ``PART_WORDS`` of them)."""
PART_WORDS = 1 << 18


def merged_parts(runs: Sequence[Run], more: WordTable | None, stack: ExitStack, cleanup: Callable[[], None]) -> TableParts:
    """The sum of the runs (and of the table ``more``), sorted by pre-token, a part at a time,
    each run's pages let go as they are read: a count larger than memory laid out for
    training without ever being held whole. The runs' maps are ``stack``'s, closed at the end
    (or when the parts are let go), and then ``cleanup`` runs. At most as many words as the
    runs hold together, and bytes of them."""
    words = sum(len(run.table[1]) // 8 for run in runs) + len(more or ())
    words_bytes = sum(len(run.table[0]) for run in runs) + (len(more.words) if more is not None else 0)
    return TableParts(_merged_parts(runs, more, stack, cleanup), words, words_bytes)


def _merged_parts(runs: Sequence[Run], more: WordTable | None, stack: ExitStack, cleanup: Callable[[], None]) -> Iterator[WordTable]:
    try:
        with stack:
            tables = [run.table for run in runs] + ([(more.words, more.ends, more.counts)] if more is not None else [])
            merge = TableMerge(tables)
            try:
                while True:
                    words, ends, counts = merge.take(PART_BYTES, PART_WORDS)
                    if not counts:
                        return
                    yield WordTable.packed(words, ends, counts)
                    for run, (nbytes, nwords) in zip(runs, merge.read(), strict=False):
                        run.let_go(nbytes, nwords)
            finally:
                del merge, tables  # the buffers it holds, before the maps close
    finally:
        cleanup()
