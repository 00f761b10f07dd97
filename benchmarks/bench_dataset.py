"""The dataset command's throughput: a ~50 MB corpus encoded with GPT-2's files into uint16 ids,
with 1 and with 2 workers.

The corpus is ``en-mix-6m.txt`` repeated into one plain-text file of ``--mb`` MB. Each run
is a fresh process calling ``encode_dataset`` (as ``bpe-tui encode --file ... --out ...``
does, without the progress bar), timed twice: the whole run, from before the model is
loaded to the sidecar written, and the encoding alone, the model loaded (the throughput of
file encoding: loading GPT-2's files is a fixed cost, whatever the size of the corpus).
CPU is the time of the process and any children (on a busy machine, wall time over CPU time
shows how much of the cores the run got). Median of ``--rounds`` runs; the worker counts take
turns round by round (1, 2, 1, 2, ...), so a machine's drift over time touches them all alike.
The load average is printed before and after, with what two threads of SHA-256 (no GIL, no
shared data) get over one on the machine at that moment, and a warm encode's time on each
core alone: together, the most any encoding could.

    python benchmarks/bench_dataset.py
    python benchmarks/bench_dataset.py --mb 20 --rounds 3 --workers 1 --workers 2
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import machine

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpora" / "en-mix-6m.txt"


def child(corpus: str, out: str, workers: int) -> None:
    """Encode ``corpus`` into ``out`` once and print the time, counts and peak RSS as JSON."""
    sys.path.insert(0, str(ROOT))
    from engine import Tokenizer
    from engine.corpus.sources import expand_inputs
    from engine.encode.dataset import encode_dataset

    started = time.perf_counter()
    tokenizer = Tokenizer.from_files(SHARED / "fixtures" / "gpt2_vocab.json", SHARED / "fixtures" / "gpt2_merges.txt")
    loaded = time.perf_counter()
    summary = encode_dataset(tokenizer, expand_inputs([corpus]), out, eot=tokenizer.special_ids["<|endoftext|>"], workers=workers)
    seconds = time.perf_counter() - started
    encoding = time.perf_counter() - loaded
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    rss = max(u.ru_maxrss for u in usage)
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)
    print(
        json.dumps(
            {"seconds": seconds, "encoding": encoding, "cpu": cpu, "bytes": summary.bytes_read, "tokens": summary.tokens, "rss_kb": rss}
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=50, help="size of the generated corpus (default 50 MB)")
    parser.add_argument("--workers", type=int, action="append", help="worker counts (default 1 and 2)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=3, metavar=("CORPUS", "OUT", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    text = CORPUS.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        with open(corpus, "wb") as f:
            for _ in range(-(-args.mb * 10**6 // len(text))):
                f.write(text)
        size = corpus.stat().st_size
        counts = args.workers or [1, 2]
        print(
            f"{corpus.name}: {size / 1e6:.1f} MB ({CORPUS.name} repeated), GPT-2 files, --eot, uint16 out; "
            f"median of {args.rounds}, worker counts interleaved; {machine()}"
        )
        runs: dict[int, list[dict[str, float]]] = {workers: [] for workers in counts}
        for _ in range(args.rounds):
            for workers in counts:
                runs[workers].append(
                    json.loads(
                        subprocess.run(
                            [sys.executable, __file__, "--child", str(corpus), str(Path(tmp) / "ids.bin"), str(workers)],
                            check=True,
                            capture_output=True,
                            text=True,
                        ).stdout
                    )
                )
        print("| workers | whole run | speed-up | encoding | speed-up | MB/s | tokens/s | CPU | peak RSS |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        first = first_encoding = None
        for workers in counts:
            seconds = statistics.median(r["seconds"] for r in runs[workers])
            encoding = statistics.median(r["encoding"] for r in runs[workers])
            first, first_encoding = first or seconds, first_encoding or encoding
            cpu = statistics.median(r["cpu"] for r in runs[workers])
            print(
                f"| {workers} | {seconds:.2f} s | {first / seconds:.2f}x | {encoding:.2f} s | {first_encoding / encoding:.2f}x | "
                f"{size / 1e6 / encoding:.1f} | {runs[workers][0]['tokens'] / encoding:,.0f} | {cpu:.2f} s | "
                f"{max(r['rss_kb'] for r in runs[workers]) / 1024:.0f} MB |"
            )
        print(f"after: {machine()}")


if __name__ == "__main__":
    main()
