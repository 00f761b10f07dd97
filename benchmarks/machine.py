"""What else the machine is doing while a benchmark runs, printed beside its numbers."""

from __future__ import annotations

import hashlib
import os
import statistics
import threading
import time


def machine() -> str:
    """The 1-, 5- and 15-minute load averages (other work on the machine skews the times) and
    the speed-up of two threads hashing over one, median of 5: near 2x when a second core is
    free, near 1x when other work holds it."""
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
    return f"load average {load}, 2 threads of SHA-256 {speedup:.2f}x one"
