"""Training speed and memory: bpe-tui against its peers, side by side in one run.

Each trainer runs in a fresh process (so start-up and imports count, and peak memory is its
own), several rounds, alternating the order. Peers run only when installed
(``pip install '.[bench]'``). Wall time is measured around the whole process; a peer slower
than ``--timeout`` is stopped and shown as such, not run again.

The standard set trains on prose (``en-mix-6m.txt``, ``zh-xiyouji.txt``) and on corpora of
other shapes that ``shapes.py`` generates: DNA-like lines of 1,000 letters, one word of
1 MB with nothing between its letters, and source code; each at two vocabulary sizes.

Where the time went on the long pre-tokens, before the trainer's core found a word's count
from the word starts (py-spy ``--native``, samples in the whole process): a merge read the
count that the separator after a word holds by going token by token to the word's end,
once per occurrence outside the word it last read. In a word of a million bytes, every
merge walked the word again and again: 72% of the samples on the 1 MB word @ 1,000 (6.3 s),
42% on DNA @ 4,096, where lines are 1,000 bytes. Looked up in the word starts instead, that
part is gone (0.74 s). What remains on the long words is the merge loop's reads of the
tokens at the pair's positions, scattered through a layout larger than the caches once the
word is tens of MB: the loop asks for them 16 positions ahead, which took the 20 MB word's
CPU time from 5.0 to 3.1 s. Counting, the layout, the heap and the events are small beside
it. On DNA the rest is the merge loop's hash lookups (``probe``) for the four pair changes
of each occurrence and the interpreter's start-up.

On the prose and code rows counting was most of the time (80% of the samples on code, about
0.24 of en-mix-6m's 0.38 s): a Python string and a dict entry per part of the text between
spaces, and the pre-tokenizer once per distinct part, about 27 MB/s. Counted in C instead
(``engine/corpus/_tally.c``: the compiled pre-tokenizer over the whole text, each pre-token's
bytes hashed into one table) it runs at 100 MB/s on en-mix-6m and 236 MB/s on zh-xiyouji.

WordPiece (``--algorithm wordpiece``) is timed the same way against Hugging Face's
``WordPieceTrainer`` with BERT's pre-tokenizer and special tokens, the one people install
(it merges by frequency, as BPE does, where bpe-tui's merges by likelihood); both write a
``tokenizer.json``.

    python benchmarks/bench_train.py                    # the standard set of runs
    python benchmarks/bench_train.py --corpus FILE --vocab-size 10000 --rounds 5
    python benchmarks/bench_train.py --algorithm wordpiece
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SPECIAL = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

STANDARD_RUNS = [
    ("fixtures/corpus.en", (500,)),
    ("corpora/en-mix-6m.txt", (10_000, 32_000)),
    ("corpora/zh-xiyouji.txt", (5_000, 10_000)),
    ("dna", (4_096, 16_384)),
    ("one-word", (1_000, 4_000)),
    ("code", (4_096, 16_384)),
]
"""Corpora (a path under /work/shared, or a shape of ``shapes.py``) and their vocabulary sizes."""

WORDPIECE_RUNS = [
    ("fixtures/corpus.en", (400,)),
    ("corpora/en-mix-6m.txt", (30_000,)),
    ("corpora/zh-xiyouji.txt", (10_000,)),
]
"""WordPiece's corpora and vocabulary sizes."""
BERT_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TRAINERS = {
    "bpe": ["bpe-tui", "bpe-tui steps", "hf-tokenizers", "rustbpe", "bpeasy", "gigatoken"],
    "wordpiece": ["bpe-tui wordpiece", "hf-wordpiece"],
}

SHAPE_BYTES = {"dna": 5_000_000, "one-word": 1_000_000, "code": 4_000_000}


def corpus_path(name: str) -> str:
    """The file of a standard corpus: a shape is generated once into the temporary directory,
    by another process (a process's peak RSS outlives its exec, so this one, which starts
    every run, stays small)."""
    if name in SHAPE_BYTES:
        path = Path(tempfile.gettempdir()) / "bpe-tui-shapes" / f"{name}-{SHAPE_BYTES[name]}.txt"
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            subprocess.run(
                [sys.executable, str(Path(__file__).with_name("shapes.py")), name, str(SHAPE_BYTES[name]), str(path)], check=True
            )
        return str(path)
    return str(SHARED / name)


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
    elif name == "bpe-tui wordpiece":
        sys.path.insert(0, str(ROOT))
        from engine.encode.wordpiece import WordPieceTokenizer
        from engine.train.wordpiece.trainer import WordPieceTrainer

        trainer = WordPieceTrainer.from_file(corpus, vocab_size, BERT_SPECIAL)
        trainer.run()
        with tempfile.TemporaryDirectory() as out:
            WordPieceTokenizer.from_trainer(trainer).save(Path(out) / "tokenizer.json")
    elif name == "hf-wordpiece":
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.train([corpus], trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=BERT_SPECIAL, show_progress=False))
        with tempfile.TemporaryDirectory() as out:
            tok.save(str(Path(out) / "tokenizer.json"))
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
    elif name == "gigatoken":  # its own GPT-2 pre-tokenizer; the file is one document
        import gigatoken

        gigatoken.train_bpe(gigatoken.TextFileSource([corpus]), vocab_size, [SPECIAL])
    import resource

    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    print(json.dumps({"rss_mb": rss / 1024}))


PEER_MODULES = {
    "hf-tokenizers": "tokenizers",
    "hf-wordpiece": "tokenizers",
    "rustbpe": "rustbpe",
    "bpeasy": "bpeasy",
    "gigatoken": "gigatoken",
}


def available(names: list[str]) -> list[str]:
    return [n for n in names if n not in PEER_MODULES or importlib.util.find_spec(PEER_MODULES[n])]


def measure(name: str, corpus: str, vocab_size: int, timeout: float) -> tuple[float, float] | None:
    """Wall seconds and peak RSS (MB) of one run, or None when it took over ``timeout``."""
    start = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", name, "--corpus", corpus, "--vocab-size", str(vocab_size)],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    wall = time.perf_counter() - start
    return wall, json.loads(out.stdout.strip().splitlines()[-1])["rss_mb"]


def bench(corpus: str, vocab_size: int, names: list[str], rounds: int, timeout: float) -> None:
    size = os.path.getsize(corpus) / 1e6
    print(f"\n{Path(corpus).name} ({size:.1f} MB) @ vocab {vocab_size:,}, {rounds} rounds, load {os.getloadavg()[0]:.1f}")
    walls: dict[str, list[float]] = {n: [] for n in names}
    rss: dict[str, float] = {n: 0.0 for n in names}
    too_slow: set[str] = set()
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            if name in too_slow:
                continue
            got = measure(name, corpus, vocab_size, timeout)
            if got is None:
                too_slow.add(name)
                continue
            walls[name].append(got[0])
            rss[name] = max(rss[name], got[1])
    ours = min(walls[names[0]])
    print(f"  {'trainer':<19}{'min s':>9}{'median s':>10}{'peak RSS MB':>13}{'bpe-tui / it':>14}")
    for name in names:
        if not walls[name]:
            print(f"  {name:<19}{'> ' + format(timeout, 'g'):>9}")
            continue
        best = min(walls[name])
        print(f"  {name:<19}{best:>9.3f}{statistics.median(walls[name]):>10.3f}{rss[name]:>13.0f}{ours / best:>13.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child")
    parser.add_argument("--corpus")
    parser.add_argument("--vocab-size", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference", action="store_true", help="also time the plain reference trainer")
    parser.add_argument("--timeout", type=float, default=120, help="seconds after which a run is stopped")
    parser.add_argument("--only", nargs="*", help="standard corpora to run (by name: en-mix-6m, dna, ...)")
    parser.add_argument("--trainer", action="append", help="trainers to run (repeatable; default all installed)")
    parser.add_argument("--algorithm", choices=list(TRAINERS), default="bpe", help="bpe (default) or wordpiece: its trainers and runs")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.corpus, args.vocab_size)
        return
    names = available(args.trainer or TRAINERS[args.algorithm])
    if args.reference:
        names.append("reference")
    table = WORDPIECE_RUNS if args.algorithm == "wordpiece" else STANDARD_RUNS
    standard = [(c, v) for c, sizes in table for v in sizes if not args.only or any(o in c for o in args.only)]
    runs = [(args.corpus, args.vocab_size)] if args.corpus else [(corpus_path(c), v) for c, v in standard]
    peers = [n for n in names if not n.startswith("bpe-tui")]
    print(f"{os.cpu_count()} cores; peers found: {', '.join(peers) or 'none'}")
    for corpus, vocab_size in runs:
        if not Path(corpus).exists():
            print(f"\n{corpus}: not found, skipped")
            continue
        bench(corpus, vocab_size, names, args.rounds, args.timeout)


if __name__ == "__main__":
    main()
