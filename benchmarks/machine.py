"""What else the machine is doing while a benchmark runs, printed beside its numbers."""

from __future__ import annotations

import hashlib
import os
import statistics
import threading
import time
from pathlib import Path

ENGLISH = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "en-mix-6m.txt"


def machine() -> str:
    """The 1-, 5- and 15-minute load averages (other work on the machine skews the times), the
    speed-up of two threads hashing over one, median of 5: near 2x when a second core is
    free, near 1x when other work holds it; and an encode's time on each core alone
    (``per_core``)."""
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
    return f"load average {load}, 2 threads of SHA-256 {speedup:.2f}x one, {per_core()}"


def per_core(rounds: int = 7) -> str:
    """A warm encode of en-mix-6m's first megabyte under GPT-2, in this thread pinned to each
    core in turn, median of ``rounds``; and so the most two threads could get over the
    faster core alone (1 + its time over the slower's). SHA-256 runs in a core's own
    caches; the encoder reads tables of megabytes, and a virtual machine's core that shares
    caches with a neighbour's work runs it slower: on one such machine, for minutes at a
    time, one core took 4.2 ms and the other 2.9, while two threads of SHA-256 got 1.9x."""
    if not hasattr(os, "sched_setaffinity") or not ENGLISH.exists():
        return "per core: not measured"
    import models  # the GPT-2 files, read here only

    text = ENGLISH.read_bytes()[: 1 << 20].decode(errors="ignore")
    tokenizer = models.bpe_tui("gpt2")
    allowed = os.sched_getaffinity(0)
    times = {}
    try:
        for core in sorted(allowed):
            os.sched_setaffinity(0, {core})  # this thread's
            tokenizer.encode(text)

            def timed() -> float:
                started = time.perf_counter()
                tokenizer.encode(text)
                return time.perf_counter() - started

            times[core] = statistics.median(timed() for _ in range(rounds))
    finally:
        os.sched_setaffinity(0, allowed)
    cores = ", ".join(f"core {core} {t * 1e3:.2f} ms" for core, t in times.items())
    fast, slow = min(times.values()), max(times.values())
    return f"a warm encode of 1 MB alone on {cores} (two threads at most {1 + fast / slow:.2f}x the faster)"
