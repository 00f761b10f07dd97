"""Unigram training against SentencePiece: time, peak memory and held-out tokens, one run.

Each trainer runs in a fresh process (start-up and imports count, peak RSS is its own),
several rounds alternating the order, with the same threads: bpe-tui's ``UnigramTrainer``
and ``sentencepiece``'s ``SentencePieceTrainer.train(model_type='unigram',
character_coverage=1.0, normalization_rule_name='identity')``, both to the same vocabulary
size; each saves its model. The held-out text is then encoded by each model (bpe-tui's
through ``engine``, whose ids equal HF ``tokenizers``' on the saved ``tokenizer.json``):
whole, and line by line, as SentencePiece saw its training text. WikiText (in en-mix-6m)
writes unknown words as ``<unk>``, which bpe-tui's model matches as its special token and
SentencePiece spells out: the ``no <unk>`` column counts with them written ``?``.

The standard cases: en-mix-6m trained on its first four fifths, counted on the last; and
zh-xiyouji trained whole (as the issue's check does) and on its first four fifths, counted
on its last fifth (seen in training, then held out).

    python benchmarks/bench_unigram.py                       # the standard cases @ 8,000
    python benchmarks/bench_unigram.py --vocab-size 16000 --rounds 5 --threads 2
    python benchmarks/bench_unigram.py --train FILE --held-out FILE
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpora"
TRAINERS = ("bpe-tui", "sentencepiece")


def child(name: str, train: str, vocab_size: int, threads: int, out: str) -> None:
    """Train once in this process, save the model into ``out``; print the peak RSS."""
    if name == "bpe-tui":
        sys.path.insert(0, str(ROOT))
        from engine.encode.unigram import UnigramTokenizer
        from engine.train.unigram.trainer import UnigramTrainer

        trainer = UnigramTrainer.from_file(train, vocab_size, threads=threads)
        trainer.run()
        UnigramTokenizer.from_trainer(trainer).save_dir(out)
    else:
        import sentencepiece as spm

        Path(out).mkdir(parents=True, exist_ok=True)
        spm.SentencePieceTrainer.train(
            input=train,
            model_prefix=str(Path(out) / "spm"),
            model_type="unigram",
            vocab_size=vocab_size,
            character_coverage=1.0,
            normalization_rule_name="identity",
            num_threads=threads,
            minloglevel=2,
        )
    print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def measure(name: str, train: str, vocab_size: int, threads: int, out: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one training process."""
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            name,
            "--train",
            train,
            "--vocab-size",
            str(vocab_size),
            "--threads",
            str(threads),
            "--out",
            out,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - start, json.loads(done.stdout.strip().splitlines()[-1])["rss_mb"]


def token_counts(name: str, out: str, held_out: str) -> tuple[int, int, int]:
    """Tokens of the held-out text whole, line by line, and whole with ``<unk>`` written
    ``?``: counted in a process of its own, so that this one stays small (a child's peak RSS
    starts at its parent's)."""
    done = subprocess.run(
        [sys.executable, __file__, "--count", name, "--out", out, "--held-out", held_out], check=True, capture_output=True, text=True
    )
    whole, lines, plain = json.loads(done.stdout.strip().splitlines()[-1])
    return whole, lines, plain


def count(name: str, out: str, held_out: str) -> None:
    """Print the token counts of ``token_counts`` (in the child)."""
    text = Path(held_out).read_text(encoding="utf-8")
    if name == "bpe-tui":
        sys.path.insert(0, str(ROOT))
        from engine.encode.unigram import UnigramTokenizer

        encode = UnigramTokenizer.load(out).encode
    else:
        import sentencepiece as spm

        encode = spm.SentencePieceProcessor(model_file=str(Path(out) / "spm.model")).encode
    lines = sum(len(encode(line)) for line in text.split("\n"))
    print(json.dumps([len(encode(text)), lines, len(encode(text.replace("<unk>", "?")))]))


def split(path: Path, tmp: Path) -> tuple[str, str]:
    """The first four fifths of a file (cut after a line) and the rest."""
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) * 4 // 5) + 1
    head, tail = tmp / f"{path.stem}-train.txt", tmp / f"{path.stem}-held-out.txt"
    head.write_bytes(data[:cut])
    tail.write_bytes(data[cut:])
    return str(head), str(tail)


def bench(label: str, train: str, held_out: str, vocab_size: int, rounds: int, threads: int, tmp: Path) -> None:
    size = os.path.getsize(train) / 1e6
    print(f"\n{label}: train {Path(train).name} ({size:.1f} MB) @ {vocab_size:,}, {threads} threads, {rounds} rounds")
    walls: dict[str, list[float]] = {n: [] for n in TRAINERS}
    rss = dict.fromkeys(TRAINERS, 0.0)
    outs = {n: str(tmp / f"{label}-{n}") for n in TRAINERS}
    for r in range(rounds):
        for name in TRAINERS[r % 2 :] + TRAINERS[: r % 2]:
            wall, peak = measure(name, train, vocab_size, threads, outs[name])
            walls[name].append(wall)
            rss[name] = max(rss[name], peak)
    counts = {n: token_counts(n, outs[n], held_out) for n in TRAINERS}
    print(f"  {'trainer':<15}{'min s':>8}{'median s':>10}{'RSS MB':>9}{'tokens':>10}{'by line':>10}{'no <unk>':>10}")
    for name in TRAINERS:
        whole, lines, plain = counts[name]
        row = f"{min(walls[name]):>8.2f}{statistics.median(walls[name]):>10.2f}{rss[name]:>9.0f}{whole:>10,}{lines:>10,}{plain:>10,}"
        print(f"  {name:<15}{row}")
    ours, theirs = counts["bpe-tui"], counts["sentencepiece"]
    time_ratio = min(walls["bpe-tui"]) / min(walls["sentencepiece"])
    ratios = " / ".join(f"{a / b:.3f}" for a, b in zip(ours, theirs, strict=True))
    print(f"  bpe-tui / sentencepiece: time {time_ratio:.2f}x, RSS {rss['bpe-tui'] / rss['sentencepiece']:.2f}x, tokens {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", choices=TRAINERS)
    parser.add_argument("--count", choices=TRAINERS)
    parser.add_argument("--out")
    parser.add_argument("--train", help="a corpus to train on (with --held-out): instead of the standard cases")
    parser.add_argument("--held-out", help="the text to count tokens on")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for both trainers (default: the cores)")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.train, args.vocab_size, args.threads, args.out)
        return
    if args.count:
        count(args.count, args.out, args.held_out)
        return
    if importlib.util.find_spec("sentencepiece") is None:
        sys.exit("sentencepiece is not installed: pip install sentencepiece")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if args.train:
            bench("custom", args.train, args.held_out or args.train, args.vocab_size, args.rounds, args.threads, tmp)
            return
        en_train, en_test = split(SHARED / "en-mix-6m.txt", tmp)
        zh_train, zh_test = split(SHARED / "zh-xiyouji.txt", tmp)
        bench("en-mix-6m", en_train, en_test, args.vocab_size, args.rounds, args.threads, tmp)
        bench("zh-xiyouji (whole)", str(SHARED / "zh-xiyouji.txt"), zh_test, args.vocab_size, args.rounds, args.threads, tmp)
        bench("zh-xiyouji (4/5)", zh_train, zh_test, args.vocab_size, args.rounds, args.threads, tmp)


if __name__ == "__main__":
    main()
