"""Counting on a Dask cluster: the shards of ``engine.corpus.shards``, counted by Dask workers and
added up on the cluster, so that only the final count table comes back.

``--dask`` names where: ``local`` or ``local:N`` starts a ``distributed.LocalCluster`` of N
worker processes (one thread each: counting holds the interpreter lock most of the time) on
127.0.0.1; anything else is a scheduler's address (``tcp://HOST:8786``). From Python, an
existing ``distributed.Client`` may be passed instead (a threaded cluster, for instance).

A task is a run of consecutive shards, each counted by ``count_shard`` on a worker, which
opens the file itself (through ``fsspec`` for URLs, so the workers must see the paths), into
one tally for the task (a part seen in one of its shards is not resolved again), packed and
sorted (``engine.corpus.word_table``). As tasks finish, their tables are merged ``FAN_IN`` at a time
by merge tasks on the cluster, the finished first: a tree whose root is the count table of
the corpus, sent to the trainer. As a worker finishes a shard it tells the client (a Dask
event on a topic of the run's own), so progress moves a shard at a time, not a task.
Each partial table carries the per-shard digests, bytes and bad records, put back in plan
order at the end, so the digest of the inputs is the one local counting gives. A worker
that dies is replaced and its tasks rerun by Dask.

``dask`` and ``distributed`` are imported here only, and only when a cluster is asked for.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any

from engine.corpus.shards import CountSettings, PretokenTally, Shard, ShardCount, count_shard
from engine.corpus.sources import optional
from engine.corpus.word_table import WordTable
from engine.errors import CorpusError, SettingsError

FAN_IN = 4
"""Tables one merge task adds up: a tree of depth log4(tasks), each merge small enough to
start as soon as a few tasks are done."""

TASKS_PER_THREAD = 2
"""Counting tasks per worker thread: few, so that each tallies several shards together (as a
local worker tallies all of its own), and more than one, so that the threads even out."""

CONNECT_TIMEOUT = 5.0
"""Seconds to reach a scheduler before giving up."""

_LOCAL = re.compile(r"local(?::(\d+))?")
_SCHEDULER = re.compile(r"(?:[a-z]+://)?(?:\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):\d+")

Counting = Callable[[Shard, CountSettings, None, PretokenTally], ShardCount]
"""``count_shard``'s shape: a shard counted into a tally."""


def check_target(spec: str) -> None:
    """``SettingsError`` for a ``--dask`` value that cannot work, before anything starts:
    ``local:0``, an empty address, or the extra not installed."""
    local = _LOCAL.fullmatch(spec)
    if (local is None and _SCHEDULER.fullmatch(spec) is None) or (local and local[1] and int(local[1]) < 1):
        raise SettingsError(f"--dask {spec}: use local, local:N with N >= 1 workers, or a scheduler address tcp://HOST:PORT")
    for module in ("dask", "distributed"):
        if not _installed(module):
            raise SettingsError(f"--dask {spec} needs {module}: pip install 'bpe-tui[dask]'")


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (dask takes a second)."""
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: set to None in sys.modules, i.e. blocked
        return False


@dataclass(slots=True)
class _Partial:
    """Counts of some shards, sorted by pre-token, with each one's ``ShardCount`` (its own
    counts empty) by plan index."""

    table: WordTable
    shards: list[tuple[int, ShardCount]]


def _count(first: int, shards: list[Shard], settings: CountSettings, count: Counting, topic: str) -> _Partial:
    """A worker's task: consecutive shards (plan indices from ``first``) counted together,
    each one's plan index logged under ``topic`` once it is counted."""
    from distributed import get_worker

    worker = get_worker()
    tally = PretokenTally(settings.pretokenizer)
    done = []
    for index, shard in enumerate(shards, start=first):
        done.append((index, count(shard, settings, None, tally)))
        worker.log_event(topic, index)
    return _Partial(tally.table(by_word=True), done)


def _merge(*parts: _Partial) -> _Partial:
    """A worker's task: several partial tables added up."""
    table = parts[0].table
    for part in parts[1:]:
        table = table.merged(part.table)
    return _Partial(table, [s for p in parts for s in p.shards])


def count_on_dask(
    shards: Sequence[Shard],
    settings: CountSettings,
    dask: Any,
    read: Callable[[int], None],
    name: str,
    count: Counting = count_shard,
) -> tuple[WordTable, list[ShardCount]]:
    """Count ``shards`` on the cluster ``dask`` names (or is): the corpus's counts (sorted)
    and each shard's ``ShardCount`` in plan order. ``read`` is told each shard's bytes once,
    as a worker finishes it (from the client's thread) or at the latest when its task ends.

    ``count`` is what a task runs on each of its shards (``count_shard``); it must be
    importable on the workers.
    """
    if not shards:  # Parquet files without row groups: nothing to send anywhere
        return WordTable.sorted({}), []
    with _client(dask, len(shards)) as client:
        distributed = optional("distributed", "dask", "--dask")
        try:
            table, per_shard = _tree_count(client, shards, settings, read, count, distributed)
        except distributed.KilledWorker:
            raise CorpusError(f"{name}: Dask workers died counting it, again on every retry (out of memory or killed)") from None
        except OSError as e:  # the scheduler went away mid-run
            raise CorpusError(f"{name}: lost the Dask cluster while counting ({e})") from None
    return table, [r for _, r in sorted(per_shard, key=lambda item: item[0])]


def _tree_count(
    client: Any, shards: Sequence[Shard], settings: CountSettings, read: Callable[[int], None], count: Counting, distributed: Any
) -> tuple[WordTable, list[tuple[int, ShardCount]]]:
    """Submit the counting tasks, and merge tasks over whatever has finished, until one is
    left, which comes back."""
    threads = max(1, sum(client.nthreads().values()))
    size = -(-len(shards) // (TASKS_PER_THREAD * threads))  # shards a task
    starts = range(0, len(shards), size)
    groups = [list(shards[i : i + size]) for i in starts]
    credited: set[int] = set()
    lock = threading.Lock()

    def credit(indices: Iterable[int]) -> None:
        """Tell ``read`` the bytes of the shards not told yet: a rerun task counts its
        shards again, and an event may come after its task is seen to end."""
        with lock:
            for i in indices:
                if i not in credited:
                    credited.add(i)
                    read(shards[i].size)

    topic = f"bpe-tui-counted-{uuid.uuid4().hex}"
    client.subscribe_topic(topic, lambda event: credit((event[1],)))  # event: (time, plan index)
    try:
        futures = client.map(_count, starts, groups, settings=settings, count=count, topic=topic, pure=False)
        tasks = {f.key: range(start, start + len(group)) for f, start, group in zip(futures, starts, groups, strict=True)}
        done = distributed.as_completed(futures, loop=client.loop)
        del futures  # each table is let go once merged, not kept until the end
        ready: list[Any] = []
        for future in done:
            if future.status != "finished":
                future.result()  # raises what the task raised (bad input names its file)
            if future.key in tasks:
                credit(tasks.pop(future.key))
            ready.append(future)
            if len(ready) == FAN_IN or (len(ready) > 1 and done.count() == 0):
                done.add(client.submit(_merge, *ready, pure=False))
                ready = []
        root = ready[0].result()
    finally:
        if client.status == "running":  # a client that lost its scheduler can send nothing
            client.unsubscribe_topic(topic)
    return root.table, root.shards


@contextmanager
def _client(dask: Any, shards: int) -> Iterator[Any]:
    """A client of the cluster ``dask`` names, closed (with any cluster it started) after."""
    if not isinstance(dask, str):
        yield dask  # the caller's own client: theirs to close
        return
    check_target(dask)
    distributed = optional("distributed", "dask", f"--dask {dask}")
    local = _LOCAL.fullmatch(dask)
    if local is None:
        try:
            client = distributed.Client(dask, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as e:
            raise SettingsError(f"--dask {dask}: cannot reach the Dask scheduler ({_first_line(e)})") from None
        with client:
            yield client
        return
    workers = min(int(local[1] or os.cpu_count() or 1), max(shards, 1))
    with warnings.catch_warnings():  # its status page moving off a port in use is no news here
        warnings.filterwarnings("ignore", "Port .* is already in use")
        cluster = distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    with cluster, distributed.Client(cluster, set_as_default=False) as client:
        yield client


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
