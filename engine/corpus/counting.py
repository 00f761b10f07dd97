"""Counting a corpus: its inputs planned as shards (``engine.corpus.shards``), counted here or by
parallel worker processes.

Each shard is counted by ``count_shard``, which streams its part of a file in blocks cut where
a pre-token boundary is certain, so memory grows with the number of distinct pre-tokens rather
than the file size. A corpus above ``IN_PROCESS`` bytes is counted by workers, each taking
shards from one queue as it is free and opening the files itself: a thread of this process
and worker processes for the other cores (this process would otherwise only wait, and a
process of its own would hold another interpreter). Each counter keeps a part of the
pre-tokens, by hash, and sends the others theirs (``engine.corpus.tally_parts``), and the bytes
read reported across all inputs. A small corpus is cut into shards small enough for every
counter to get its share (``even_shards``).

A stream (standard input, a named pipe) is read in this process, as it arrives: no other
process can read it. Its first ``STREAM_IN_PROCESS`` bytes are counted here too; a longer one is
handed on, a block at a time, to the workers, which count it beside the files on every core
(at most two blocks a worker waiting, so reading never runs far ahead of counting), read
into slots of shared memory that every counter maps (``shared_blocks``), so only a slot's
number goes through the queue. Its size is unknown until it ends, so progress then has no
total.

``count_table`` gives the counts packed (``WordTable``), as training uses them: counted by
workers, the counts never exist here as a dict of Python objects, which would take several
times their size. ``count_inputs`` gives them as a ``Counter``.
"""

from __future__ import annotations

import os
import signal
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.runs import Keeping, RunKeeper, kept_runs, merged_parts, merged_runs, plan_digest
from engine.corpus.shards import (
    MAX_BLOCK,
    SHARD_BYTES,
    Block,
    CountSettings,
    PretokenTally,
    Shard,
    ShardCount,
    count_block,
    count_shard,
    count_texts,
    inputs_digest,
    keep_mmap_threshold,
    plan_shards,
    stream_blocks,
    trim_heap,
)
from engine.corpus.shared_blocks import SharedBlocks, attach, shared_block
from engine.corpus.sources import JSONL, STDIN, Source, find_inputs, label
from engine.corpus.tally_parts import Outboxes, join, part_path, read_part, write_own
from engine.corpus.word_table import TableParts, WordTable
from engine.errors import BpeError, CorpusError

if TYPE_CHECKING:
    from multiprocessing import Queue

Progress = Callable[[str, int, int | None], None]
"""Progress callback: ``(phase, done, total)``; phase is "read" (bytes) or "merge" (merges);
total None: not known (a stream is read)."""

IN_PROCESS = 16 << 20
"""Corpora up to this size are counted in this process: below it, starting workers and
merging their results costs more than they save."""
STREAM_IN_PROCESS = 4 << 20
"""A stream's first bytes, counted in this process before workers are started for the rest:
its length is unknown, and what is counted here is counted on one core. Piped in, two
workers: 40 MB of new words took 0.86-0.89 s with the first 16 MB counted here and 0.66-0.67
s with 4 (8: no better than 4); 40 MB of English 0.21 and 0.18 s. A stream of 6 to 16 MB
pays for the workers it no longer counts without: 6 MB of new words 0.09 s and 0.17 s."""
SHARDS_AT_LEAST = 16
"""Files are cut into at least this many shards, down to ``MIN_SHARD_BYTES``: 40 MB in
shards of ``SHARD_BYTES`` would be 32 MB and 8, one counter left waiting on the other."""
MIN_SHARD_BYTES = 1 << 20


def even_shards(sources: Sequence[Source], shard_bytes: int) -> int:
    """The length of shards to cut ``sources`` into: ``shard_bytes``, or less for a small
    corpus (see ``SHARDS_AT_LEAST``). It depends on the files alone, not on how many count
    them, so the digest of the inputs does not either."""
    return min(shard_bytes, max(MIN_SHARD_BYTES, sum(s.size for s in sources) // SHARDS_AT_LEAST))


@dataclass(frozen=True, slots=True)
class CountSummary:
    """What was counted, besides the counts: kept with saved counts and shown in summaries."""

    inputs: tuple[tuple[str, int], ...]
    """Every input file, in order, with its size in bytes as stored (a stream: as read)."""
    bytes_read: int
    bad_records: int
    """JSONL lines or Parquet rows skipped as bad (with ``skip_bad_records``)."""
    digest: str
    """BLAKE2b of the inputs' bytes as stored (Parquet: their text values), shard by shard
    in plan order; the same files give the same digest however many processes count them."""
    skipped_inputs: tuple[str, ...] = ()
    """Bad files skipped (``skip_bad_inputs``), each as the line saying what is wrong with it."""
    resumed: int = 0
    """Shards whose counts an earlier, stopped count had kept (``keep``): not read again."""

    @property
    def label(self) -> str:
        return label([path for path, _ in self.inputs])


def as_inputs(inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str | os.PathLike[str]]:
    """One path or several, as a list."""
    return [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)


def count_inputs(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    settings: CountSettings,
    workers: int | None = None,
    progress: Progress | None = None,
    shard_bytes: int = SHARD_BYTES,
    dask: Any = None,
    keep: str | os.PathLike[str] | None = None,
    max_memory: int | None = None,
) -> tuple[Counter[bytes], CountSummary]:
    """Pre-token counts of files, directories and glob patterns, as ``count_table`` makes
    them, in a ``Counter``."""
    table, summary = count_table(inputs, settings, workers, progress, shard_bytes, dask, keep, max_memory)
    return table.counter(), summary


def count_table(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    settings: CountSettings,
    workers: int | None = None,
    progress: Progress | None = None,
    shard_bytes: int = SHARD_BYTES,
    dask: Any = None,
    keep: str | os.PathLike[str] | None = None,
    max_memory: int | None = None,
) -> tuple[WordTable, CountSummary]:
    """Pre-token counts of files, directories and glob patterns, in one table (see
    ``count_parts``)."""
    parts, summary = _count(inputs, settings, workers, progress, shard_bytes, dask, keep, max_memory, False)
    return WordTable.concat(list(parts)), summary


def count_parts(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    settings: CountSettings,
    workers: int | None = None,
    progress: Progress | None = None,
    shard_bytes: int = SHARD_BYTES,
    dask: Any = None,
    max_memory: int | None = None,
) -> tuple[Iterable[WordTable], CountSummary]:
    """Pre-token counts as ``count_table`` makes them, in tables to be read one after
    another, no word in two of them: with ``max_memory``, the runs counting spilled are
    joined a part at a time as they are read (``engine.corpus.runs.merged_parts``), and the
    whole table is never held; counted by workers, each worker's part of the pre-tokens
    (``engine.corpus.tally_parts``). ``CorpusError`` if there is nothing to train on."""
    parts, summary = _count(inputs, settings, workers, progress, shard_bytes, dask, None, max_memory, True)
    if isinstance(parts, list):
        check_counted(parts, summary)
    return parts, summary


def _count(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    settings: CountSettings,
    workers: int | None,
    progress: Progress | None,
    shard_bytes: int,
    dask: Any,
    keep: str | os.PathLike[str] | None,
    max_memory: int | None,
    in_parts: bool,
) -> tuple[list[WordTable] | TableParts, CountSummary]:
    """Pre-token counts of files, directories and glob patterns, counted by ``workers``
    processes (default: all cores), or on the Dask cluster ``dask`` names (``local[:N]``, a
    scheduler address or a ``distributed.Client``: see ``engine.corpus.dask_count``); ``CorpusError``
    if one cannot be read. They come in parts (none empty) that share no pre-token: one,
    unless workers counted them (one a worker) or runs are joined a part at a time
    (``in_parts``: ``TableParts``). Up to ``IN_PROCESS`` bytes, counted in this process, the
    pre-tokens come in the order they were first seen (the text's order, for the screens);
    past it, sorted, or each part sorted (the merge loop runs faster over them in order).

    ``keep``: a folder where the counts are kept as they are made (``engine.corpus.runs``):
    a count stopped and started again with the same files and settings reads only the
    shards it had not finished (not on a Dask cluster). ``max_memory``: the bytes the counters' tallies may hold
    together; past it they are written out as runs (to ``keep``, or a temporary folder) and
    joined at the end."""
    keep_mmap_threshold()  # before the first block is read: see MMAP_THRESHOLD
    found = find_inputs(as_inputs(inputs), settings.skip_bad_inputs, settings.stdin_format)
    sources = found.sources
    shards = plan_shards(sources, settings, even_shards(sources, shard_bytes))
    files = [s for s in shards if not s.stream]
    on_files = sum(s.size for s in files)
    total = None if len(files) < len(shards) else on_files
    cores = workers or os.cpu_count() or 1
    workers = min(cores, max(1, len(files)))
    report = progress or (lambda phase, done, total: None)
    done = 0
    reporting = threading.Lock()  # a stream may be read in a thread of its own

    def read(n: int) -> None:
        nonlocal done
        with reporting:
            done += n
            report("read", done, total)

    report("read", 0, total)
    name = label([s.path for s in sources])
    if dask is None and (keep is not None or max_memory is not None):  # a cluster keeps nothing on this disk
        kept, results, resumed = _count_kept(shards, settings, workers, read, name, keep, max_memory, in_parts)
        return kept, summarize(sources, shards, results, found.skipped, resumed)
    tally = PretokenTally(settings.pretokenizer)
    if dask is None and cores > 1 and len(files) < len(shards):
        parts, results = _count_streams(shards, settings, cores, read, name, tally)
    elif dask is None and (workers == 1 or on_files <= IN_PROCESS):
        results = [count_shard(shard, settings, read, tally) for shard in shards]
        size = sum(r.bytes_read for r in results)  # a stream's too
        parts = [tally.table(by_word=size > IN_PROCESS)]  # sorted, as workers' parts are (see tally_parts.write_own)
    else:
        # Streams first, here (their writers wait on them); then the files, elsewhere.
        here = {i: count_shard(shard, settings, read, tally) for i, shard in enumerate(shards) if shard.stream}
        if dask is not None:
            from engine.corpus.dask_count import count_on_dask  # imports dask: only when a cluster is asked for

            table, elsewhere = count_on_dask(files, settings, dask, read, name)
            parts = [table.merged(tally.table(by_word=True)) if here else table]
        else:  # this process's counter goes on from the streams' counts
            todo = [(i, s) for i, s in enumerate(shards) if not s.stream]
            parts, counted = _count_parallel(todo, settings, workers, read, name, tally=tally)
            elsewhere = [counted[i] for i in sorted(counted)]
        rest = iter(elsewhere)
        results = [here[i] if i in here else next(rest) for i in range(len(shards))]
    del tally
    trim_heap()  # what counting freed goes back now: the trainer built next would sit above it
    return [part for part in parts if len(part)], summarize(sources, shards, results, found.skipped)


def _count_streams(
    shards: Sequence[Shard], settings: CountSettings, cores: int, read: Callable[[int], None], name: str, tally: PretokenTally
) -> tuple[list[WordTable], list[ShardCount]]:
    """Count inputs among which are streams (see the module's docstring): the streams' first
    ``STREAM_IN_PROCESS`` bytes here, first (their writers wait on them), into ``tally``; what is
    left of them and the files here too when that is all, or else by ``cores`` counters
    (this process's going on in ``tally``), the streams' blocks fed to them as they are read."""
    with ExitStack() as stack:
        shared = None
        if any(s.stream and (s.format == JSONL or settings.pretokenizer.chunked) for s in shards):
            try:  # as many as _count_parallel lets wait, and one being read
                shared = SharedBlocks(2 * cores + 1, 2 * settings.block_bytes)
                stack.callback(shared.close)
            except OSError:  # no room for them: the blocks are handed on through the queue
                pass
        streams = {i: stack.enter_context(stream_blocks(s, settings, read, shared)) for i, s in enumerate(shards) if s.stream}
        blocks = ((i, shards[i], block) for i, (stream, _) in streams.items() for block in stream)
        feed = _Feed(blocks, dict.fromkeys(streams, 0), shared)

        def ended(i: int) -> ShardCount:
            size, digest = streams[i][1]()
            return ShardCount(Counter(), size, feed.bad[i], digest)

        seen = 0
        for i, shard, block in feed.blocks:
            feed.bad[i] += count_block(block, shard, settings, tally)
            feed.counted(block)
            seen += len(block.data)
            if seen > STREAM_IN_PROCESS:
                break
        else:  # the streams have ended: count the files as without them
            results = {i: ended(i) for i in streams}
            files = [(i, s) for i, s in enumerate(shards) if not s.stream]
            if sum(s.size for _, s in files) <= IN_PROCESS or len(files) < 2:
                results |= {i: count_shard(s, settings, read, tally) for i, s in files}
                return [tally.table()], [results[i] for i in range(len(shards))]
            parts, counted = _count_parallel(files, settings, min(cores, len(files)), read, name, tally=tally)
            return parts, [(results | counted)[i] for i in range(len(shards))]
        files = [(i, s) for i, s in enumerate(shards) if not s.stream]
        parts, counted = _count_parallel(files, settings, cores, read, name, feed=feed, tally=tally)
        results = {i: ended(i) for i in streams} | counted
    return parts, [results[i] for i in range(len(shards))]


@dataclass(slots=True)
class _Feed:
    """A stream's blocks to hand to the counters as they are read, each with its place in
    the plan, and the records skipped in each stream's blocks as the counters report them."""

    blocks: Iterator[tuple[int, Shard, Block]]
    bad: dict[int, int]
    shared: SharedBlocks | None = None
    """The slots plain text is read into, shared with the counters."""

    def counted(self, block: Block) -> None:
        """Give back the slot of a block counted."""
        if block.slot >= 0:
            assert self.shared is not None
            self.shared.give(block.slot)


CHECKPOINT_SECONDS = float(os.environ.get("BPE_TUI_CHECKPOINT_SECONDS", 60))
"""How often a count that can go on writes out what it has counted, at a shard's end: at
most this much counting is done again after a stop (``BPE_TUI_CHECKPOINT_SECONDS``: 0
writes a run after every shard)."""
TALLY_OVERHEAD = 24 << 20
"""What a counter holds besides its tally (the text being read and parsed): taken off the
budget ``max_memory`` leaves each counter."""


def _count_kept(
    shards: Sequence[Shard],
    settings: CountSettings,
    workers: int,
    read: Callable[[int], None],
    name: str,
    keep: str | os.PathLike[str] | None,
    max_memory: int | None,
    in_parts: bool,
) -> tuple[list[WordTable] | TableParts, list[ShardCount], int]:
    """Count with the counts kept as runs on disk (see ``count_table``): the table (or, ``in_parts``,
    its parts as the runs are joined: ``merged_parts``), each shard's result in plan order,
    and how many shards earlier runs had finished."""
    import shutil
    import tempfile

    folder = Path(keep) if keep is not None else Path(tempfile.mkdtemp(prefix="bpe-tui-counts-"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CorpusError(f"{folder}: cannot keep counts there ({e.strerror or e})") from None
    budget = None if max_memory is None else max(64 << 10, max_memory // workers - TALLY_OVERHEAD)
    keeping = Keeping(str(folder), plan_digest(shards, settings), budget, CHECKPOINT_SECONDS if keep is not None else None)

    def cleanup() -> None:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)
        elif not any(folder.iterdir()):  # stopped before any run: nothing to go on from
            folder.rmdir()
        trim_heap()

    handed_on = False  # the parts clean up once read
    try:
        with ExitStack() as stack:
            finished = {i: r for run in kept_runs(folder, keeping.plan, stack) for i, r in run.done.items()}
        for i in finished:
            read(shards[i].size)
        streams = PretokenTally(settings.pretokenizer)  # read once, never kept: a stream cannot be read again
        results: dict[int, ShardCount] = {i: count_shard(s, settings, read, streams) for i, s in enumerate(shards) if s.stream}
        todo = [(i, s) for i, s in enumerate(shards) if not s.stream and i not in finished]
        if workers == 1 or sum(s.size for _, s in todo) <= IN_PROCESS:
            tally = PretokenTally(settings.pretokenizer)
            keeper = RunKeeper(keeping, tally)
            for i, shard in todo:
                keeper.started(i)
                results[i] = count_shard(shard, settings, read, tally)
                keeper.finished(i, results[i])
            keeper.close()
            del tally, keeper
        elif todo:
            results.update(_count_parallel(todo, settings, workers, read, name, keeping)[1])
        stack = ExitStack()
        runs = kept_runs(folder, keeping.plan, stack)
        results.update({i: r for run in runs for i, r in run.done.items() if i not in results})
        in_order = [results[i] for i in range(len(shards))]
        more = streams.table(by_word=True) if len(streams.tally) else None
        if in_parts:
            if not len(more or ()) and not any(len(run.table[1]) for run in runs):
                stack.close()
                return [], in_order, len(finished)
            handed_on = True
            return merged_parts(runs, more, stack, cleanup), in_order, len(finished)
        with stack:
            table = merged_runs(runs)
        if more is not None:
            table = table.merged(more)
        return [table] if len(table) else [], in_order, len(finished)
    finally:
        if not handed_on:
            cleanup()


def summarize(
    sources: Sequence[Source], shards: Sequence[Shard], results: Sequence[ShardCount], skipped: Sequence[str] = (), resumed: int = 0
) -> CountSummary:
    """The summary of counting ``sources`` from their shards' results, in plan order."""
    read = {shard.path: result.bytes_read for shard, result in zip(shards, results, strict=True) if shard.stream}
    return CountSummary(
        tuple((s.path, read.get(s.path, s.size)) for s in sources),
        sum(r.bytes_read for r in results),
        sum(r.bad_records for r in results),
        inputs_digest(r.digest for r in results),
        tuple(skipped),
        resumed,
    )


def check_counted(counts: Sized, summary: CountSummary) -> None:
    """``CorpusError`` saying why, if counting found no pre-tokens to train on."""
    if not counts:
        raise CorpusError(f"{summary.label}: {_nothing(summary)}: no text to train on")


def _nothing(summary: CountSummary) -> str:
    if summary.bad_records:
        return f"every record is bad ({summary.bad_records:,} skipped)"
    if all(size == 0 for _, size in summary.inputs):
        if len(summary.inputs) > 1:
            return "the files are empty"
        return "nothing came in" if summary.inputs[0][0] == STDIN else "the file is empty"
    return "it holds nothing but special tokens"


def count_file(
    path: str | os.PathLike[str],
    pretok: PreTokenizer,
    workers: int | None = None,
    progress: Progress | None = None,
    errors: str = "strict",
    block_size: int | None = None,
) -> Counter[bytes]:
    """Pre-token counts of one file; ``block_size`` (tests) sets both the shards' length and
    the blocks they are read in."""
    settings = CountSettings(pretok.pattern, pretok.special_tokens, errors=errors, block_bytes=block_size or MAX_BLOCK)
    return count_inputs([path], settings, workers, progress, shard_bytes=block_size or SHARD_BYTES)[0]


def count_iterable(texts: Iterable[str], pretok: PreTokenizer) -> Counter[bytes]:
    """Pre-token counts of an iterable of strings, each a document of its own."""

    def checked() -> Iterable[str]:
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise CorpusError(f"item {i:,} of the texts is {type(text).__name__}, not str")
            yield text

    counts = count_texts(checked(), pretok)
    if not counts:
        raise CorpusError("the texts hold nothing but special tokens or nothing at all: no text to train on")
    return counts


@dataclass(frozen=True, slots=True)
class _Joining:
    """How parallel counters join their tallies (``engine.corpus.tally_parts``): the folder
    their parts go through, how many counters there are, and an event (a
    ``multiprocessing.Event``) set once every counter has written its parts."""

    folder: str
    counters: int
    ready: Any


def _count_parallel(
    shards: list[tuple[int, Shard]],
    settings: CountSettings,
    workers: int,
    read: Callable[[int], None],
    name: str,
    keeping: Keeping | None = None,
    feed: _Feed | None = None,
    tally: PretokenTally | None = None,
) -> tuple[list[WordTable], dict[int, ShardCount]]:
    """Hand the shards (each with its place in the plan) to ``workers`` counters through one
    queue: ``workers - 1`` processes and a thread of this one (going on in ``tally``, if
    given). Each counts what it gets with ``count_shard``, reports bytes as it reads and each
    shard's digest as it ends; then the counters join their tallies by hash, each handing
    back its part of the pre-tokens (``engine.corpus.tally_parts``): the counts, in parts
    that share no pre-token. With ``keeping``, they write runs instead
    (``engine.corpus.runs``) and there are no parts. ``feed``: a stream's blocks,
    read by a thread of this process as the counters take them, at most two a counter
    waiting."""
    # Imported here: a small corpus, counted in this process, need not pay for them.
    import multiprocessing
    import queue
    import shutil
    import tempfile

    # fork is fastest, but forking a process that runs other threads (the app) is unsafe.
    context = multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")
    tasks = context.Queue()  # the shards are small plain data: all of them go in at once
    results = context.Queue()
    joining = None if keeping is not None else _Joining(tempfile.mkdtemp(prefix="bpe-tui-parts-"), workers, context.Event())
    shared = None if feed is None or feed.shared is None else (feed.shared.path, feed.shared.size)
    procs = [
        context.Process(target=_worker, args=(settings, tasks, results, keeping, joining, k, shared), daemon=True)  # type: ignore[attr-defined]
        for k in range(1, workers)
    ]
    stop = threading.Event()
    here = threading.Thread(
        target=_count_tasks, args=(settings, tasks, results, stop, keeping, joining, 0, shared, tally), daemon=True, name="counting"
    )
    room = threading.Semaphore(2 * workers)
    feeding: list[BaseException] = []

    def feed_blocks() -> None:
        """Put the stream's blocks on the queue as there is room, then the ends."""
        assert feed is not None
        try:
            for i, shard, block in feed.blocks:
                while not room.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                if block.slot >= 0:  # its bytes are where the counters can see them
                    tasks.put(("slot", i, shard, block.slot, len(block.data), block.offset, block.lines_before))
                else:
                    tasks.put(("block", i, shard, block))
        except BaseException as e:  # bad input in the stream: the loop below raises it
            feeding.append(e)
        finally:
            for _ in range(workers):
                tasks.put(None)

    feeder = None if feed is None else threading.Thread(target=feed_blocks, daemon=True, name="reading the stream")

    def check() -> None:
        if feeding:
            raise feeding[0]
        if any(p.exitcode for p in procs):
            raise CorpusError(f"{name}: a worker process died while counting pre-tokens (out of memory or killed); try fewer --workers")

    finished = written = attached = 0
    per_shard: dict[int, ShardCount] = {}
    parts: dict[int, WordTable] = {}
    try:
        for p in procs:
            p.start()  # before the threads: forked while this process runs no thread of its own
        here.start()
        for index, shard in shards:
            tasks.put(("shard", index, shard))
        if feeder is None:
            for _ in range(workers):
                tasks.put(None)
        else:
            feeder.start()
        while finished < workers:
            try:
                kind, *rest = results.get(timeout=0.1)
            except queue.Empty:
                check()
                continue
            if kind == "read":
                read(rest[0])
            elif kind == "fed":
                room.release()
                assert feed is not None
                feed.bad[rest[0]] += rest[1]
                if rest[2] >= 0:
                    assert feed.shared is not None
                    feed.shared.give(rest[2])
            elif kind == "shard":
                per_shard[rest[0]] = rest[1]
            elif kind == "attached":
                attached += 1
                if attached == workers:  # every counter maps the slots: nothing is left behind if this process is killed
                    assert feed is not None and feed.shared is not None
                    feed.shared.unlink()
            elif kind == "parts":
                written += 1
                if joining is not None and written == workers:
                    joining.ready.set()
            elif kind == "counts":  # the counter's part is written (None: its counts went to runs)
                if joining is not None and rest[0] is not None:
                    parts[rest[0]] = read_part(part_path(joining.folder, rest[0]))
                finished += 1
            elif kind == "failed":
                raise rest[0]
            else:  # "crashed": a bug, not bad input
                raise RuntimeError(f"a counting worker failed:\n{rest[0]}")
        check()
        return [parts[k] for k in sorted(parts)], per_shard
    finally:
        stop.set()
        if feed is not None and feed.shared is not None:
            feed.shared.close()  # a reader waiting for a slot stops
        if feeder is not None and feeder.is_alive():
            feeder.join(timeout=1.0)  # it stops between two blocks; a stream that sends nothing more cannot hold this up
        if here.is_alive():  # given up: it stops within a block, and must not write to the closed queues
            tasks.put(None)  # in case it waits for a shard
            here.join()
        for p in procs:
            if p.pid is not None:
                p.terminate()  # a no-op for one that has finished
                p.join()
        if finished < workers:
            tasks.cancel_join_thread()  # shards no worker will take must not hold up exit
        for q in (tasks, results):
            q.close()
            q.join_thread()  # no queue thread left behind: a later fork would copy it
        if joining is not None:
            shutil.rmtree(joining.folder, ignore_errors=True)


def _worker(
    settings: CountSettings,
    tasks: Queue[tuple[object, ...] | None],
    results: Queue[tuple[object, ...]],
    keeping: Keeping | None,
    joining: _Joining | None,
    counter: int,
    shared: tuple[str, int] | None,
) -> None:
    # Ctrl-C reaches the whole process group: the parent decides what it means, not workers.
    # SIGTERM (the parent cleaning up) just ends a worker, whatever handler it was forked with.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _count_tasks(settings, tasks, results, threading.Event(), keeping, joining, counter, shared)


def _count_tasks(
    settings: CountSettings,
    tasks: Queue[tuple[object, ...] | None],
    results: Queue[tuple[object, ...]],
    stop: threading.Event,
    keeping: Keeping | None,
    joining: _Joining | None,
    counter: int,
    shared: tuple[str, int] | None = None,
    tally: PretokenTally | None = None,
) -> None:
    """Count what ``tasks`` holds until a None, into one tally (``tally``, or a new one):
    ``("shard", index, shard)``, or a stream's block read by the parent: ``("block", index,
    shard, block)``, or ``("slot", index, shard, slot, length, offset, lines before)`` for
    one in a slot of the ``SharedBlocks`` whose path and slot size are ``shared`` (mapped
    first, and said: ``("attached",)``). Say what happens on ``results``: bytes read, each shard's ``ShardCount``, each block
    counted; then, with ``keeping``, ``("counts", None)`` once the runs are written; or else
    ``("parts",)`` once it has sent the others their part of its pre-tokens (as it counts,
    if most are new: ``Outboxes``), and, once every counter has (``joining.ready``),
    ``("counts", counter)`` when it has joined its part and written it. Once ``stop`` is set
    it ends at the next progress report, saying nothing more."""

    def progress(n: int) -> None:
        if stop.is_set():
            raise _Stopped
        results.put(("read", n))

    if tally is None:
        tally = PretokenTally(settings.pretokenizer)  # one for every shard: each distinct pre-token is held once
    keeper = None if keeping is None else RunKeeper(keeping, tally)
    try:
        with ExitStack() as stack:
            outboxes = None if joining is None else stack.enter_context(Outboxes(tally.tally, joining.folder, counter, joining.counters))
            mapped = None
            if shared is not None:  # at once: once every counter has, its name can go
                mapped = stack.enter_context(attach(shared[0]))
                results.put(("attached",))
            for task in iter(tasks.get, None):
                if stop.is_set():
                    return
                kind, *rest = task
                if kind == "block":
                    index, shard, block = rest
                    assert isinstance(index, int) and isinstance(shard, Shard) and isinstance(block, Block)
                    results.put(("fed", index, count_block(block, shard, settings, tally), -1))
                elif kind == "slot":
                    index, shard, slot, length, offset, lines = rest
                    assert isinstance(index, int) and isinstance(shard, Shard) and shared is not None
                    assert isinstance(slot, int) and isinstance(length, int) and isinstance(offset, int) and isinstance(lines, int)
                    assert mapped is not None
                    with shared_block(mapped, shared[1], slot, length) as data:
                        bad = count_block(Block(data, offset, lines), shard, settings, tally)
                    results.put(("fed", index, bad, slot))
                else:
                    index, shard = rest
                    assert isinstance(index, int) and isinstance(shard, Shard)
                    if keeper is not None:
                        keeper.started(index)
                    result = count_shard(shard, settings, progress, tally)
                    results.put(("shard", index, result))
                    if keeper is not None:
                        keeper.finished(index, result)
                if outboxes is not None:
                    with _parts_errors(outboxes.folder):
                        outboxes.route_if_new()
            if keeper is not None:
                keeper.close()
                results.put(("counts", None))
                return
            assert joining is not None and outboxes is not None
            folder, counters = joining.folder, joining.counters
            with _parts_errors(folder):
                outboxes.send()
            results.put(("parts",))
            while not joining.ready.wait(0.1):
                if stop.is_set():
                    return
            with _parts_errors(folder):
                join(tally.tally, [part_path(folder, c, counter) for c in range(counters) if c != counter])
                write_own(tally.tally, folder, counter)
        results.put(("counts", counter))
        tally.reset()  # its part is handed back: what it holds goes now, not when the caller lets it go
    except _Stopped:
        return
    except BpeError as e:
        results.put(("failed", e))
    except Exception:
        results.put(("crashed", traceback.format_exc()))


@contextmanager
def _parts_errors(folder: str) -> Iterator[None]:
    """A file of the counters' parts that cannot be written: one line."""
    try:
        yield
    except OSError as e:
        raise CorpusError(f"{folder}: cannot write the counters' parts there ({e.strerror or e})") from None


class _Stopped(BaseException):
    """Raised in a counting thread that was told to stop: not an ``Exception``, so that no
    handler on the way out of the reading code takes it for a read error."""
