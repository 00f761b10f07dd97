"""Saved counts: count a corpus once, then train several vocabulary sizes from the counts file.

Counts ``en-mix-6m.txt`` once with ``--save-counts``' code path, then for each vocabulary
size, in a fresh process each round (as ``bpe-tui train --counts`` runs): loading the
counts file, laying out the words (the trainer's state before any merge), and the merges,
timed apart (the merges also in CPU time, which a busy machine disturbs less). Median of
``--rounds``.

    python benchmarks/bench_counts.py
    python benchmarks/bench_counts.py --corpus other.txt --vocab 8000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "en-mix-6m.txt"
SPECIAL = "<|endoftext|>"


def child(counts: str, vocab_size: int) -> None:
    """Train once from ``counts`` and print the phases' times as JSON."""
    sys.path.insert(0, str(ROOT))
    from engine import Trainer
    from engine.corpus.counts_file import load_counts

    started = time.perf_counter()
    saved = load_counts(counts)
    loaded = time.perf_counter()
    trainer = Trainer(saved.table, vocab_size, [SPECIAL])  # as Trainer.from_counts_file does
    laid_out, cpu = time.perf_counter(), time.process_time()
    trainer.run()
    merged = time.perf_counter()
    print(
        json.dumps(
            {
                "load": loaded - started,
                "layout": laid_out - loaded,
                "merge": merged - laid_out,
                "merge_cpu": time.process_time() - cpu,
                "merges": trainer.merges_done,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--vocab", type=int, action="append", help="vocabulary sizes (default 8000, 16000, 32000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", nargs=2, metavar=("COUNTS", "VOCAB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    sys.path.insert(0, str(ROOT))
    from engine import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "corpus.counts"
        started = time.perf_counter()
        Trainer.from_files(args.corpus, 300, [SPECIAL], save_counts=counts)
        print(
            f"{args.corpus.name}: counted and saved in {time.perf_counter() - started:.2f} s, "
            f"{counts.stat().st_size / 1e6:.1f} MB of counts"
        )
        print("| vocab | merges | load counts | lay out words | merge | merge (CPU) | total |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for vocab in args.vocab or [8000, 16000, 32000]:
            runs = [
                json.loads(
                    subprocess.run(
                        [sys.executable, __file__, "--child", str(counts), str(vocab)], check=True, capture_output=True, text=True
                    ).stdout
                )
                for _ in range(args.rounds)
            ]
            med = {k: statistics.median(r[k] for r in runs) for k in ("load", "layout", "merge", "merge_cpu")}
            print(
                f"| {vocab:,} | {runs[0]['merges']:,} | {med['load']:.3f} s | {med['layout']:.3f} s | "
                f"{med['merge']:.3f} s | {med['merge_cpu']:.3f} s | {med['load'] + med['layout'] + med['merge']:.3f} s |"
            )


if __name__ == "__main__":
    main()
