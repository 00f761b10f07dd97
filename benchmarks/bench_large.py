"""A corpus bigger than it is worth holding in memory: time and peak memory on ~1 GB.

The corpus is ``en-mix-6m.txt`` repeated, each repetition with a different number appended
to every line, so the file grows while its distinct pre-tokens grow only by the numbers
(at most ``NUMBERS`` of them). It is written to a temporary directory and deleted at the
end. Each trainer runs in a process of its own; its peak memory is sampled as the resident
size of it and all its descendants together (Linux ``/proc``), so counting workers count.

    python benchmarks/bench_large.py                       # 1 GB, vocab 10,000
    python benchmarks/bench_large.py --gb 0.1 --gb 1      # memory at two file sizes
    python benchmarks/bench_large.py --gb 2 --trainer bpe-tui
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT.parent / "shared" / "corpora" / "en-mix-6m.txt"
SPECIAL = "<|endoftext|>"
NUMBERS = 100_000
"""The numbers appended to lines are drawn below this."""


def repetitions(size: int, source: Path = SOURCE) -> Iterator[str]:
    """``source`` repeated with varied numbers, one repetition at a time, about ``size``
    bytes (UTF-8) in all."""
    lines = source.read_text(encoding="utf-8").splitlines()
    written = 0
    for rep in range(1 << 30):
        if written >= size:
            return
        rng = random.Random(rep)
        block = "".join(f"{line} {rng.randrange(NUMBERS)}\n" if line else "\n" for line in lines)
        written += len(block.encode("utf-8"))
        yield block


def generate(path: Path, size: int, source: Path = SOURCE) -> int:
    """Write about ``size`` bytes of ``source`` repeated with varied numbers; the size written."""
    with open(path, "w", encoding="utf-8") as f:
        for block in repetitions(size, source):
            f.write(block)
    return path.stat().st_size


def child(name: str, corpus: str, vocab_size: int) -> None:
    """Train once in this process and print JSON about the run."""
    info: dict[str, object] = {}
    if name == "bpe-tui":
        sys.path.insert(0, str(ROOT))
        from engine import PreTokenizer, Trainer
        from engine.corpus.counting import count_file

        counts = count_file(corpus, PreTokenizer("gpt2", [SPECIAL]))
        info["distinct_pretokens"] = len(counts)
        trainer = Trainer(counts, vocab_size, [SPECIAL])
        del counts
        trainer.run()
        print(TRAINED, flush=True)
        info["merges"] = trainer.merges_done
    else:
        from bench_train import train_hf  # this script's folder is on sys.path

        info["merges"] = train_hf(corpus, vocab_size).get_vocab_size() - 257
        print(TRAINED, flush=True)
    print(json.dumps(info))


def _tree_memory(pid: int) -> tuple[int, int]:
    """Resident bytes of ``pid`` and its descendants now, summed two ways: RSS, where a page
    that forked processes share counts in each, and PSS, where it is split between them
    (both 0 once the process has gone)."""
    rss = pss = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in rollup.splitlines()[1:]}
            rss += fields["Rss"]
            pss += fields["Pss"]
            for task in os.listdir(f"/proc/{p}/task"):
                stack += map(int, Path(f"/proc/{p}/task/{task}/children").read_text().split())
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return rss, pss


TRAINED = "trained"
"""What a child prints once it has trained: its wall time and memory are read up to there,
before whatever it then works out to report."""


CGROUPS = Path("/sys/fs/cgroup")


def memory_cap(limit: int) -> Path:
    """A cgroup that holds the processes put in it to ``limit`` bytes of memory, past which
    the kernel kills them (root only; cgroup v2's ``memory.max``, or v1's memory controller)."""
    v1 = CGROUPS / "memory"
    group = (v1 if v1.is_dir() else CGROUPS) / f"bench-cap-{os.getpid()}"
    group.mkdir(exist_ok=True)
    if v1.is_dir():
        (group / "memory.limit_in_bytes").write_text(str(limit))
    else:
        (group / "memory.max").write_text(str(limit))
        (group / "memory.swap.max").write_text("0")
    return group


def measure(script: str, name: str, *args: str, cap: int | None = None, limit: float | None = None) -> tuple[float, float, float, dict]:
    """Run ``script --child NAME ARGS`` in a fresh process: wall seconds, the peak MB of the
    process with its descendants (summed RSS, and summed PSS) until it prints ``TRAINED`` (or
    ends), and the JSON line it printed last. With ``cap``, it runs held to that many bytes
    (``memory_cap``), and with ``limit`` for at most that many seconds: stopped there, its
    JSON says when (``stopped``)."""
    start = time.perf_counter()
    group = memory_cap(cap) if cap else None
    join = (lambda: (group / "cgroup.procs").write_text(str(os.getpid()))) if group else None
    proc = subprocess.Popen([sys.executable, script, "--child", name, *args], stdout=subprocess.PIPE, text=True, preexec_fn=join)
    peak = peak_pss = 0
    trained = threading.Event()

    def sample() -> None:
        nonlocal peak, peak_pss
        while proc.poll() is None and not trained.is_set():
            rss, pss = _tree_memory(proc.pid)
            peak, peak_pss = max(peak, rss), max(peak_pss, pss)
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    timer = threading.Timer(limit, proc.kill) if limit else None
    if timer:
        timer.start()
    wall = None
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        if line.strip() == TRAINED and wall is None:
            wall = time.perf_counter() - start
            trained.set()
        lines.append(line)
    proc.wait()
    wall = wall or time.perf_counter() - start
    trained.set()
    sampler.join()
    if timer:
        timer.cancel()
    if group:
        group.rmdir()
    if proc.returncode == -signal.SIGKILL and (cap or limit):
        why = f"the {limit:g} s limit" if limit and wall >= limit else f"the {(cap or 0) / 1e9:g} GB cap"
        return wall, peak / 1e6, peak_pss / 1e6, {"stopped": f"killed at {why} after {wall:.0f} s"}
    if proc.returncode:
        raise SystemExit(f"{name} failed with status {proc.returncode}")
    return wall, peak / 1e6, peak_pss / 1e6, json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child")
    parser.add_argument("--corpus")
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--gb", type=float, action="append", help="corpus size in GB (repeatable; default 1)")
    parser.add_argument("--dir", help="where to write the corpus (default: a temporary directory)")
    parser.add_argument("--trainer", action="append", choices=["bpe-tui", "hf-tokenizers"], help="(repeatable; default both)")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.corpus, args.vocab_size)
        return
    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE}: not found")
    names = args.trainer or ["bpe-tui"] + (["hf-tokenizers"] if importlib.util.find_spec("tokenizers") else [])
    print(f"{os.cpu_count()} cores; vocab {args.vocab_size:,}; trainers: {', '.join(names)}")
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-large-") as tmp:
        for gb in args.gb or [1.0]:
            corpus = Path(tmp) / f"corpus-{gb:g}gb.txt"
            started = time.perf_counter()
            size = generate(corpus, int(gb * 1e9))
            print(f"\n{size / 1e9:.2f} GB corpus generated in {time.perf_counter() - started:.0f} s")
            print(f"  {'trainer':<15}{'wall s':>9}{'peak RSS MB':>13}  notes")
            for name in names:
                wall, peak, _, info = measure(__file__, name, "--corpus", str(corpus), "--vocab-size", str(args.vocab_size))
                notes = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in info.items())
                print(f"  {name:<15}{wall:>9.1f}{peak:>13.0f}  {notes}", flush=True)
            corpus.unlink()


if __name__ == "__main__":
    main()
