"""What else the machine is doing while a benchmark runs, printed beside its numbers."""

from __future__ import annotations

import ctypes
import hashlib
import mmap
import os
import statistics
import threading
import time
from pathlib import Path

ENGLISH = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "en-mix-6m.txt"


def machine() -> str:
    """The 1-, 5- and 15-minute load averages (other work on the machine skews the times), the
    speed-up of two threads hashing over one, median of 5: near 2x when a second core is
    free, near 1x when other work holds it; an encode's time on each core alone and on all
    at once (``per_core``); and new memory written by threads and by processes (``faults``)."""
    data = bytes(16 << 20)

    def hashing(threads: int) -> float:
        started = time.perf_counter()
        running = [threading.Thread(target=hashlib.sha256, args=(data,)) for _ in range(threads)]
        for t in running:
            t.start()
        for t in running:
            t.join()
        return time.perf_counter() - started

    speedup = statistics.median(2 * hashing(1) / hashing(2) for _ in range(5))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"load average {load}, 2 threads of SHA-256 {speedup:.2f}x one, {per_core()}, {faults()}"


FAULTED = 12 << 20
"""The new memory ``faults`` writes: about the list of ids of en-mix-6m under GPT-2."""


def _written(size: int, parts: int) -> float:
    """Seconds to write ``size`` bytes of memory new to this process, ``parts`` threads each
    writing a share (``ctypes.memset`` lets the GIL go), every page faulted in on the way."""
    buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # as malloc maps
    base = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    share = size // parts
    running = [threading.Thread(target=ctypes.memset, args=(base + k * share, 1, share)) for k in range(parts)]
    started = time.perf_counter()
    for t in running:
        t.start()
    for t in running:
        t.join()
    return time.perf_counter() - started


def _in_processes(size: int, parts: int) -> float:
    """Seconds for ``parts`` processes at once to write ``size`` bytes of new memory, a share
    each: the slowest one's."""
    go_read, go_write = os.pipe()
    results = []
    for _ in range(parts):
        done_read, done_write = os.pipe()
        if os.fork() == 0:  # the child: waits, writes its share, tells its time
            os.read(go_read, 1)
            os.write(done_write, repr(_written(size // parts, 1)).encode())
            os._exit(0)
        os.close(done_write)
        results.append(done_read)
    os.write(go_write, b"x" * parts)
    times = [float(os.read(fd, 64)) for fd in results]
    for fd in (go_read, go_write, *results):
        os.close(fd)
    for _ in range(parts):
        os.wait()
    return max(times)


def faults(rounds: int = 5) -> str:
    """``FAULTED`` bytes of new memory written by one thread, by two threads of this process
    (half each), and by two processes (half each), medians of ``rounds``: what a cold
    encode's page faults cost, and whether two threads take them at once as two processes
    do. A thread started just before its half was written often ran on the starting
    thread's core until that was done (a C test: two threads 4.3-4.9 ms or 7.8-8.9, one
    8.2-9.9), so both are started before either writes."""
    if not hasattr(os, "fork"):
        return "faults: not measured"
    one = statistics.median(_written(FAULTED, 1) for _ in range(rounds))
    threads = statistics.median(_written(FAULTED, 2) for _ in range(rounds))
    processes = statistics.median(_in_processes(FAULTED, 2) for _ in range(rounds))
    return (
        f"{FAULTED >> 20} MB of new memory written in {one * 1e3:.1f} ms by one thread, "
        f"{threads * 1e3:.1f} by two, {processes * 1e3:.1f} by two processes"
    )


def per_core(rounds: int = 7) -> str:
    """A warm encode of en-mix-6m's first megabyte under GPT-2 on each core alone (this
    thread pinned to each in turn), then on every core at once (a thread pinned to each,
    an encoder each, nothing shared but the process), medians of ``rounds``; and what the
    cores at once encode over what the faster does alone: what threads of one process got
    then, no ceiling (in one reading it gave 1.08x while two processes, each encoding half a
    text, got 1.9x minutes apart; the cores change speed within minutes). SHA-256 runs in a
    core's own caches; the encoder reads tables of megabytes, which a virtual machine's
    cores share with each other and with a neighbour's work: on one such machine, for
    minutes at a time, one core took 4.2 ms and the other 2.9, while two threads of SHA-256
    got 1.9x; and random reads over 8 MB took 3 ns alone and 9-18 ns on both cores at once,
    each over 8 MB of its own, where over 4 MB they took 2.6-3.4 ns either way."""
    if not hasattr(os, "sched_setaffinity") or not ENGLISH.exists():
        return "per core: not measured"
    import models  # the GPT-2 files, read here only

    text = ENGLISH.read_bytes()[: 1 << 20].decode(errors="ignore")
    cores = sorted(os.sched_getaffinity(0))
    tokenizers = {core: models.bpe_tui("gpt2") for core in cores}
    alone: dict[int, float] = {}
    together: dict[int, float] = {}
    barrier = threading.Barrier(len(cores))

    def timed(core: int, out: dict[int, float], wait: bool) -> None:
        allowed = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {core})  # this thread's
        try:
            tokenizers[core].encode(text)
            times = []
            for _ in range(rounds):
                if wait:
                    barrier.wait()  # each round on every core at once
                started = time.perf_counter()
                tokenizers[core].encode(text)
                times.append(time.perf_counter() - started)
            out[core] = statistics.median(times)
        except BaseException:
            barrier.abort()  # the other cores' threads stop waiting for this one
            raise
        finally:
            os.sched_setaffinity(0, allowed)

    for core in cores:
        timed(core, alone, wait=False)
    running = [threading.Thread(target=timed, args=(core, together, True)) for core in cores]
    for t in running:
        t.start()
    for t in running:
        t.join()
    if len(together) < len(cores):
        return "per core: not measured"
    fast = min(alone.values())
    most = sum(fast / together[core] for core in cores)
    return (
        f"a warm encode of 1 MB on {', '.join(f'core {core} {alone[core] * 1e3:.2f} ms' for core in cores)} alone, "
        f"{' and '.join(f'{together[core] * 1e3:.2f}' for core in cores)} at once "
        f"(threads {most:.2f}x one)"
    )
