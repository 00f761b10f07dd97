"""Training speed and memory: bpe-tui against its peers, side by side in one run.

Each trainer runs in a fresh process (so start-up and imports count, and peak memory is its
own), several rounds, alternating the order. Peers run only when installed
(``pip install '.[bench]'``). Wall time is measured around the whole process.

    python benchmarks/bench_train.py                    # the standard set of runs
    python benchmarks/bench_train.py --corpus FILE --vocab-size 10000 --rounds 5
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SPECIAL = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

STANDARD_RUNS = [
    ("fixtures/corpus.en", 500),
    ("corpora/en-mix-6m.txt", 10_000),
    ("corpora/en-mix-6m.txt", 32_000),
    ("corpora/zh-xiyouji.txt", 5_000),
]


def _lines(path: str):
    with open(path, encoding="utf-8") as f:
        yield from f


def hf_trainer(vocab_size: int):
    """Hugging Face tokenizers' BPE trainer with GPT-2's byte-level pre-tokenizer: the
    tokenizer and its trainer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    return tok, trainer


def train_hf(corpus: str, vocab_size: int):
    """Hugging Face tokenizers trained on a file."""
    tok, trainer = hf_trainer(vocab_size)
    tok.train([corpus], trainer)
    return tok


def child(name: str, corpus: str, vocab_size: int) -> None:
    """Train once in this process; print JSON with its peak RSS (or its largest finished
    child's, if larger: the standard corpora are counted without workers; bench_large.py
    sums a whole process tree)."""
    if name == "bpe-tui":
        sys.path.insert(0, str(ROOT))
        from engine import train_bpe

        train_bpe(corpus, vocab_size, [SPECIAL])
    elif name == "bpe-tui steps":  # the detailed stream: a MergeStep record for every merge
        sys.path.insert(0, str(ROOT))
        from engine import Trainer

        for _ in Trainer.from_file(corpus, vocab_size, [SPECIAL]).steps():
            pass
    elif name == "reference":
        sys.path.insert(0, str(ROOT))
        from engine import PreTokenizer, train_reference

        text = Path(corpus).read_text(encoding="utf-8")
        train_reference(PreTokenizer("gpt2", [SPECIAL]).count(text), vocab_size, [SPECIAL])
    elif name == "hf-tokenizers":
        train_hf(corpus, vocab_size)
    elif name == "rustbpe":
        import rustbpe

        rustbpe.Tokenizer().train_from_iterator(_lines(corpus), vocab_size, pattern=GPT2_PATTERN)
    elif name == "bpeasy":
        import bpeasy

        bpeasy.train_bpe(_lines(corpus), GPT2_PATTERN, 128, vocab_size)
    import resource

    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    print(json.dumps({"rss_mb": rss / 1024}))


PEER_MODULES = {"hf-tokenizers": "tokenizers", "rustbpe": "rustbpe", "bpeasy": "bpeasy"}


def available(names: list[str]) -> list[str]:
    return [n for n in names if n not in PEER_MODULES or importlib.util.find_spec(PEER_MODULES[n])]


def measure(name: str, corpus: str, vocab_size: int) -> tuple[float, float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, "--corpus", corpus, "--vocab-size", str(vocab_size)],
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    return wall, json.loads(out.stdout.strip().splitlines()[-1])["rss_mb"]


def bench(corpus: str, vocab_size: int, names: list[str], rounds: int) -> None:
    size = os.path.getsize(corpus) / 1e6
    print(f"\n{Path(corpus).name} ({size:.1f} MB) @ vocab {vocab_size:,}, {rounds} rounds")
    walls: dict[str, list[float]] = {n: [] for n in names}
    rss: dict[str, float] = {n: 0.0 for n in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            wall, mb = measure(name, corpus, vocab_size)
            walls[name].append(wall)
            rss[name] = max(rss[name], mb)
    ours = statistics.median(walls["bpe-tui"])
    print(f"  {'trainer':<15}{'median s':>10}{'min s':>9}{'peak RSS MB':>13}{'bpe-tui / it':>14}")
    for name in names:
        med = statistics.median(walls[name])
        print(f"  {name:<15}{med:>10.3f}{min(walls[name]):>9.3f}{rss[name]:>13.0f}{ours / med:>13.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child")
    parser.add_argument("--corpus")
    parser.add_argument("--vocab-size", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference", action="store_true", help="also time the plain reference trainer")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.corpus, args.vocab_size)
        return
    names = available(["bpe-tui", "bpe-tui steps", "hf-tokenizers", "rustbpe", "bpeasy"])
    if args.reference:
        names.append("reference")
    runs = [(args.corpus, args.vocab_size)] if args.corpus else [(str(SHARED / c), v) for c, v in STANDARD_RUNS]
    peers = [n for n in names if not n.startswith("bpe-tui")]
    print(f"{os.cpu_count()} cores; peers found: {', '.join(peers) or 'none'}")
    for corpus, vocab_size in runs:
        if not Path(corpus).exists():
            print(f"\n{corpus}: not found, skipped")
            continue
        bench(corpus, vocab_size, names, args.rounds)


if __name__ == "__main__":
    main()
