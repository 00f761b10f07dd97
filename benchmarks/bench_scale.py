"""Scale: a corpus of JSONL shards, counted by local processes and by a Dask
``LocalCluster(2)``, beside Hugging Face tokenizers and rustbpe, side by side in one run.

The corpus is ``bench_large``'s (``en-mix-6m.txt`` repeated, a varied number on every line),
cut into documents at blank lines, dealt round-robin to 32 gzip-compressed JSONL shards in a
temporary directory; or, with ``--corpus synth``, ``synth_corpus.py``'s zstd JSONL shards,
whose distinct pre-tokens keep growing with the size as a web corpus's do. Each trainer runs
in a fresh process:

- ``bpe-tui``: ``count_inputs`` with 2 worker processes, then the merges in this process;
- ``bpe-tui-1``: the same counted in this one process (``workers=1``, ``--workers 1``), the
  smallest footprint;
- ``bpe-tui dask``: the same with ``dask="local:2"`` (a ``LocalCluster`` of 2 worker
  processes on 127.0.0.1, its scheduler in the trainer process);
- ``hf-tokenizers``: ``train_from_iterator`` over the documents, read from the shards in Python;
- ``rustbpe``: ``train_from_iterator`` over the same documents.

Reported: wall time of the process until it has trained; peak RSS of the trainer process alone
(its own high-water mark) and of it with all its descendants (sampled every 0.1 s), as the sum
of their RSS and of their PSS (a page the forked workers share with the trainer counts once in
PSS, in each of them in RSS; rustbpe's threads share one process, where the two are alike); and
for bpe-tui a digest of the merges (the same for every way of counting), and the final count
table: distinct pre-tokens, its size packed (as training holds it)
and as a dict of bytes to int, the usual in-memory table (its keys and counts; made after the
peak is read), the trainer's peak after its imports (with ``--dask``, ``distributed``'s too),
after counting and once its core is built, its peak as a multiple of the dict, whole and above
the imports (the interpreter alone is larger than the table), and what each structure of the
merge loop has allocated at the end.

    python benchmarks/bench_scale.py                     # 2 GB, vocab 32,000
    python benchmarks/bench_scale.py --gb 0.5 --gb 2     # memory at two corpus sizes
    python benchmarks/bench_scale.py --gb 0.1 --trainer bpe-tui --trainer bpe-tui-dask
    python benchmarks/bench_scale.py --dir /data --keep  # keep the shards to run again
    python benchmarks/bench_scale.py --corpus synth --gb 1 --trainer bpe-tui --trainer rustbpe
    python benchmarks/bench_scale.py --corpus synth --gb 10 --peer-cap 20 --peer-limit 900

A peer held to ``--peer-cap`` that would take more, or still training at ``--peer-limit``
seconds, is killed there: its row says when.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench_large import SOURCE, TRAINED, measure, repetitions  # this script's folder is on sys.path
from bench_train import GPT2_PATTERN, SPECIAL, hf_trainer

ROOT = Path(__file__).resolve().parent.parent
SHARDS = 32
DICT_UP_TO = 5_000_000
"""Distinct pre-tokens up to which the counts are also made a dict to compare with (past it,
making it takes minutes and gigabytes, and says nothing new)."""
TRAINERS = {"bpe-tui": None, "bpe-tui-1": None, "bpe-tui-dask": None, "hf-tokenizers": "tokenizers", "rustbpe": "rustbpe"}
"""Trainer names and the module each needs."""


def generate(folder: Path, size: int, shards: int = SHARDS) -> int:
    """Write about ``size`` bytes of text as documents in ``shards`` JSONL.gz files; the text's
    size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    outs = [gzip.open(folder / f"shard-{i:03d}.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) for i in range(shards)]
    written = 0
    n = 0
    try:
        for block in repetitions(size):
            for doc in block.split("\n\n"):
                if doc.strip():
                    outs[n % shards].write(json.dumps({"text": doc}, ensure_ascii=False) + "\n")
                    written += len(doc.encode("utf-8"))
                    n += 1
    finally:
        for f in outs:
            f.close()
    return written


def generate_synth(folder: Path, size: int) -> int:
    """``synth_corpus.py``'s shards of about ``size`` bytes of text (seed 0, every core); the
    text's size in bytes."""
    gb = f"{size / 1e9:g}"
    subprocess.run([sys.executable, str(Path(__file__).with_name("synth_corpus.py")), "--gb", gb, "--out", str(folder)], check=True)
    return size


def documents(folder: Path) -> Iterator[str]:
    """The documents of the shards, in order: what the peers train on."""
    from backports import zstd  # Python 3.14 has it as compression.zstd

    for path in sorted(folder.glob("*.jsonl.*")):
        with (gzip if path.suffix == ".gz" else zstd).open(path, "rt", encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)["text"]


def batches(texts: Iterator[str], size: int = 1000) -> Iterator[list[str]]:
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def peak_rss_mb() -> float:
    """This process's own peak resident size (``VmHWM``; ``ru_maxrss`` would carry over the
    parent's peak through fork and exec)."""
    status = Path("/proc/self/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


def child(name: str, folder: Path, vocab_size: int) -> None:
    """Train once in this process and print JSON about the run."""
    info: dict[str, object] = {}
    started = time.perf_counter()
    if name.startswith("bpe-tui"):
        sys.path.insert(0, str(ROOT))
        from engine import Trainer
        from engine.corpus.counting import count_table
        from engine.corpus.shards import CountSettings

        if name == "bpe-tui-dask":
            import distributed  # noqa: F401  (43 MB of code the trainer needs before any count)
        info["rss_imports_mb"] = peak_rss_mb()
        where = {"dask": "local:2"} if name == "bpe-tui-dask" else {"workers": 1 if name == "bpe-tui-1" else 2}
        words, summary = count_table([str(folder / "*.jsonl.*")], CountSettings("gpt2", (SPECIAL,)), **where)  # as Trainer.from_files does
        info["count_s"] = time.perf_counter() - started
        info["rss_counted_mb"] = peak_rss_mb()
        info["distinct"] = len(words)
        info["table_packed_mb"] = (len(words.words) + 16 * len(words)) / 1e6
        merging = time.perf_counter()
        trainer = Trainer(words, vocab_size, [SPECIAL], summary=summary)
        del words
        info["rss_built_mb"] = peak_rss_mb()
        trainer.run()
        info["merge_s"] = time.perf_counter() - merging
        info["merges"] = trainer.merges_done
        info["merges_digest"] = hashlib.blake2b(repr(trainer.merges).encode(), digest_size=8).hexdigest()  # alike, or not exact
        info["rss_self_mb"] = peak_rss_mb()
        print(TRAINED, flush=True)
        info["core_mb"] = {k: round(v / 1e6, 2) for k, v in trainer.memory().items()}
        # The same counts as a dict of bytes to int, the usual in-memory count table (built
        # only now, after the peak is read: training never holds them this way).
        if info["distinct"] <= DICT_UP_TO:
            counts = {word.text: word.count for word in trainer.words(info["distinct"])}
            info["table_mb"] = (sys.getsizeof(counts) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in counts.items())) / 1e6
    elif name == "hf-tokenizers":
        tok, trainer = hf_trainer(vocab_size)
        tok.train_from_iterator(batches(documents(folder)), trainer)
        print(TRAINED, flush=True)
        info["merges"] = tok.get_vocab_size() - 257
    else:
        import rustbpe

        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(documents(folder), vocab_size, pattern=GPT2_PATTERN)
        print(TRAINED, flush=True)
        info["merges"] = tok.vocab_size - 256
    info.setdefault("rss_self_mb", peak_rss_mb())
    print(json.dumps(info))


def report(text_bytes: int, shards: int, stored: int, runs: dict[str, tuple[float, float, float, dict]]) -> None:
    print(f"\n{text_bytes / 1e9:.2f} GB of text in {shards} JSONL shards ({stored / 1e9:.2f} GB stored)")
    print(f"  {'trainer':<15}{'wall s':>8}{'x HF':>7}{'x local':>9}{'RSS self MB':>13}{'with workers':>14}{'PSS':>7}  notes")
    hf_run = runs.get("hf-tokenizers")
    hf = hf_run[0] if hf_run and "stopped" not in hf_run[3] else 0.0  # no ratio to a run cut short
    local = runs.get("bpe-tui", (0.0,))[0]
    for name, (wall, tree, tree_pss, info) in runs.items():
        ratios = f"{wall / hf:>7.2f}" if hf else f"{'':>7}"
        ratios += f"{wall / local:>9.2f}" if local else f"{'':>9}"
        notes = {k: v for k, v in info.items() if k not in ("rss_self_mb", "core_mb")}
        text = ", ".join(
            f"{k} {v:,.2f}" if isinstance(v, float) else f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in notes.items()
        )
        print(f"  {name:<15}{wall:>8.1f}{ratios}{info.get('rss_self_mb', 0):>13.0f}{tree:>14.0f}{tree_pss:>7.0f}  {text}", flush=True)
        if "table_mb" in info:
            rss, table = info["rss_self_mb"], info["table_mb"]
            growth = rss - info["rss_imports_mb"]
            print(
                f"  {'':<15}trainer RSS / in-memory count table {rss / table:.2f}x; "
                f"its growth above the imports ({growth:.1f} MB) / the table {growth / table:.2f}x"
            )
            print(f"  {'':<15}allocated at the end (MB): " + ", ".join(f"{k} {v}" for k, v in info["core_mb"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child")
    parser.add_argument("--vocab-size", type=int, default=32_000)
    parser.add_argument("--gb", type=float, action="append", help="text in GB (repeatable; default 2)")
    parser.add_argument("--dir", help="where to write the shards (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the shards in --dir, and use those already there")
    parser.add_argument("--trainer", action="append", choices=list(TRAINERS), help="(repeatable; default all installed)")
    parser.add_argument("--corpus", choices=("repeated", "synth"), default="repeated", help="en-mix-6m repeated, or synth_corpus.py's")
    parser.add_argument("--peer-cap", type=float, help="hold rustbpe and Hugging Face to this many GB of memory (root: a cgroup)")
    parser.add_argument("--peer-limit", type=float, help="stop rustbpe and Hugging Face after this many seconds")
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.dir), args.vocab_size)
        return
    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE}: not found")
    names = [n for n in args.trainer or TRAINERS if TRAINERS[n] is None or importlib.util.find_spec(TRAINERS[n])]
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; vocab {args.vocab_size:,}; trainers: {', '.join(names)}")
    if args.dir:
        Path(args.dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-scale-") as tmp:
        for gb in args.gb or [2.0]:
            folder = (Path(args.dir) if args.keep and args.dir else Path(tmp)) / f"{args.corpus}-{gb:g}gb"
            marker = folder / "text-bytes"
            started = time.perf_counter()
            if not marker.exists():
                marker.parent.mkdir(parents=True, exist_ok=True)
                make = generate_synth if args.corpus == "synth" else generate
                marker.write_text(str(make(folder, int(gb * 1e9))))
                print(f"\n{gb:g} GB corpus generated in {time.perf_counter() - started:.0f} s")
            shards = list(folder.glob("*.jsonl.*"))
            cap = int(args.peer_cap * 1e9) if args.peer_cap else None
            child_args = ("--dir", str(folder), "--vocab-size", str(args.vocab_size))
            peer = {"cap": cap, "limit": args.peer_limit}
            runs = {name: measure(__file__, name, *child_args, **({} if TRAINERS[name] is None else peer)) for name in names}
            report(int(marker.read_text()), len(shards), sum(p.stat().st_size for p in shards), runs)


if __name__ == "__main__":
    main()
