"""Encoding a large file with ``Tokenizer.encode_batch`` in 1, 2, ... worker threads.

    python benchmarks/bench_encode_parallel.py [--mb 50] [--workers 1 2] [--rounds 3]

Writes a file of about ``--mb`` MB (``en-mix-6m.txt`` repeated with varied numbers, as
``bench_large.py`` does) to a temporary directory, then per round and per worker count, in
an order that turns round by round: reads it in blocks of about 1 MB cut where no pre-token
can change (``PreTokenizer.safe_cut``) and encodes them with ``encode_batch(blocks,
workers=N)`` as they are read, each time with a fresh tokenizer (cold caches; making it is
not timed). Reports the median MB/s of wall time and the speed-up over one worker; the ids
of every worker count are checked equal to ``encode`` of the whole file. Parallel speed-up
needs idle cores: the load average at the start and end is printed beside the numbers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_large import generate  # noqa: E402 - this script's folder is on sys.path

from engine import Tokenizer  # noqa: E402

SHARED = ROOT.parent / "shared"
BLOCK = 1 << 20


def blocks(path: Path, tok: Tokenizer, size: int = BLOCK) -> Iterator[str]:
    """The file read ``size`` characters at a time and cut where no pre-token can change
    (``PreTokenizer.safe_cut``): pieces whose ids join to the whole file's."""
    rest = ""
    with open(path, encoding="utf-8") as f:
        while chunk := f.read(size):
            text = rest + chunk
            cut = tok.pretokenizer.safe_cut(text)
            if cut:
                yield text[:cut]
            rest = text[cut:]
    if rest:
        yield rest


def encode_file(path: Path, tok: Tokenizer, workers: int) -> list[list[int]]:
    return tok.encode_batch(blocks(path, tok), workers=workers)


def cut_to(path: Path, size: int) -> int:
    """Shorten the file to its last whole line within ``size`` bytes; its new size."""
    data = path.read_bytes()[:size]
    data = data[: data.rindex(b"\n") + 1]
    path.write_bytes(data)
    return len(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.txt"
        generate(path, int(args.mb * 1e6))
        size = cut_to(path, int(args.mb * 1e6))
        gpt2 = Tokenizer.from_files(SHARED / "fixtures/gpt2_vocab.json", SHARED / "fixtures/gpt2_merges.txt")
        whole = gpt2.encode(path.read_text(encoding="utf-8"))
        times: dict[int, list[float]] = {n: [] for n in args.workers}
        for r in range(args.rounds):
            order = args.workers[r % len(args.workers) :] + args.workers[: r % len(args.workers)]
            for n in order:
                tok = Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens)  # empty caches
                tok.direct = gpt2.direct
                start = time.perf_counter()
                ids = encode_file(path, tok, n)
                times[n].append(time.perf_counter() - start)
                assert [i for block in ids for i in block] == whole, f"{n} workers disagree with encode"
                del ids
    one = statistics.median(times[args.workers[0]])
    print(f"{size / 1e6:.1f} MB, {len(whole):,} tokens, {args.rounds} rounds, median wall MB/s:")
    for n, t in times.items():
        m = statistics.median(t)
        rounds = " ".join(f"{x:.2f}" for x in t)
        print(f"  {n} worker{'s' if n > 1 else ' '}  {size / 1e6 / m:6.1f} MB/s  {one / m:.2f}x  (seconds: {rounds})")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
