"""Counting with one worker and with two, on corpora from the most repetitive to one where
nearly every pre-token is new.

Each count runs ``count_parts`` (what ``bpe-tui train`` counts with) in a fresh process,
timed from the call to the parts in hand; one and two workers alternate, and the fastest of
``--rounds`` is kept. The corpora, written to a temporary folder:

- ``new``: 40 MB (``--mb``) of seven random letters a word (seeded): about 5 million distinct
  pre-tokens, nearly all seen once, the worst case for joining the workers' tallies;
- ``english``: ``en-mix-6m.txt`` repeated to 40 MB or more: 52,000 distinct pre-tokens;
- ``english, 5x``: the same at five times the size. One worker counts 40 MB of English in
  about 0.25 s, where the second process's fixed costs (some 25 ms: importing and starting
  it, its first shard, joining the tallies) weigh; at 200 MB they weigh a fifth as much;
- ``--corpus PATH`` (repeatable): files or glob patterns of your own.

``--stream`` counts each corpus that is one ``.txt`` or ``.jsonl`` file also as a stream,
piped to standard input by ``cat`` as in ``cat corpus.txt | bpe-tui train -`` (a ``.jsonl``
file read as JSONL).

    python benchmarks/bench_count_workers.py
    python benchmarks/bench_count_workers.py --mb 160 --rounds 5 --corpus '/data/*.jsonl.zst'
    python benchmarks/bench_count_workers.py --stream --corpus web.txt --corpus web.jsonl
"""

from __future__ import annotations

import argparse
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGLISH = ROOT.parent / "shared" / "corpora" / "en-mix-6m.txt"


def child(corpus: str, workers: int, stdin_format: str) -> None:
    """Count ``corpus`` once with ``workers`` and print the seconds and distinct pre-tokens."""
    sys.path.insert(0, str(ROOT))
    from engine.corpus.counting import count_parts
    from engine.corpus.shards import CountSettings

    settings = CountSettings("gpt2", ("<|endoftext|>",), stdin_format=stdin_format)
    started = time.perf_counter()
    parts, _ = count_parts([corpus], settings, workers=workers)
    seconds = time.perf_counter() - started
    print(seconds, sum(len(part) for part in parts))


def write_new(path: Path, size: int) -> None:
    rng = random.Random(0)
    letters = string.ascii_lowercase
    with path.open("w") as f:
        for _ in range(size // 8 // 1000):
            f.write(" ".join("".join(rng.choices(letters, k=7)) for _ in range(1000)) + "\n")


def write_english(path: Path, size: int) -> None:
    text = ENGLISH.read_text(encoding="utf-8")
    with path.open("w", encoding="utf-8") as f:
        for _ in range(size // len(text.encode()) + 1):
            f.write(text)


def count(corpus: str, workers: int, stream: bool = False) -> tuple[float, int]:
    """Count ``corpus`` in a fresh process, from its file or piped in by ``cat``."""
    stdin_format = "jsonl" if corpus.endswith(".jsonl") else "text"
    command = [sys.executable, __file__, "--child", "-" if stream else corpus, str(workers), stdin_format]
    if not stream:
        out = subprocess.run(command, capture_output=True, text=True, check=True)
    else:
        with subprocess.Popen(["cat", corpus], stdout=subprocess.PIPE) as cat:
            out = subprocess.run(command, stdin=cat.stdout, capture_output=True, text=True, check=True)
    seconds, distinct = out.stdout.split()
    return float(seconds), int(distinct)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=int, default=40, help="size of the generated corpora, in MB (default 40)")
    parser.add_argument("--corpus", action="append", default=[], help="files or a glob pattern of your own (repeatable)")
    parser.add_argument("--stream", action="store_true", help="count each corpus also piped to standard input")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return
    with tempfile.TemporaryDirectory() as folder:
        corpora = {"new": Path(folder) / "new.txt"}
        write_new(corpora["new"], args.mb * 1_000_000)
        if ENGLISH.exists():
            for name, times in (("english", 1), ("english, 5x", 5)):
                corpora[name] = Path(folder) / f"english-{times}.txt"
                write_english(corpora[name], times * args.mb * 1_000_000)
        shapes = {name: str(path) for name, path in corpora.items()} | {corpus: corpus for corpus in args.corpus}
        print("| corpus | distinct pre-tokens | 1 worker | 2 workers | 2 / 1 |\n| --- | ---: | ---: | ---: | ---: |")
        for name, corpus in shapes.items():
            pipeable = Path(corpus).is_file() and Path(corpus).suffix in (".txt", ".jsonl")
            if args.stream and not pipeable:
                print(f"| {name}, piped in | left out: only one .txt or .jsonl file is piped | | | |", flush=True)
            for stream in (False, True) if args.stream and pipeable else (False,):
                best = {1: float("inf"), 2: float("inf")}
                distinct = 0
                for _ in range(args.rounds):
                    for workers in (1, 2):
                        seconds, distinct = count(corpus, workers, stream)
                        best[workers] = min(best[workers], seconds)
                label = f"{name}, piped in" if stream else name
                print(f"| {label} | {distinct:,} | {best[1]:.2f} s | {best[2]:.2f} s | **{best[1] / best[2]:.2f}x** |", flush=True)


if __name__ == "__main__":
    main()
