"""Two threads against one: bpe-tui's encode under each compiled family, cold and warm.

    python benchmarks/bench_encode_threads.py [--rounds 3] [--families gpt2 cl100k o200k llama3 qwen2]
        [--corpora en-mix-6m zh-xiyouji] [--threads 1 2]

For each family, corpus and shape (``one document``: the whole file as one text;
``documents``: the file cut at blank lines, their ids as lists; ``flat documents``: the same,
their ids in one buffer; ``text file``: the file's ids read and encoded from disk, as
``bpe-tui encode --out`` does, by ``dataset_ids``; ``JSONL file``: the documents as a JSONL
file, the same way), each thread count runs in a process of its own
(the tokenizer loaded and initialized by a tiny encode first): the call is timed *cold*, the
first encode of the text in the process, then *warm*, the same text again (the cold call's
ids freed, and a garbage collection made, before each timing, as ``bench_peers.py`` does).
One thread:
``encode`` / ``encode_batch(docs, workers=1)`` / ``encode_batch_flat(docs, workers=1)``; more:
``encode_batch([text], workers=N)`` / ``encode_batch(docs, workers=N)`` /
``encode_batch_flat(docs, workers=N)``; the files, ``dataset_ids(..., workers=N)``. A cell is the best of ``--rounds`` processes, MB/s of
UTF-8 text by wall time with the CPU seconds of the process beside it, and the speed of each
thread count over one thread's. The ids of every thread count are checked equal to one
thread's.

GPT-2 runs its own files, cl100k and o200k their rank files; the fixtures hold no Llama-3 or
Qwen2 vocabulary, so ``llama3`` and ``qwen2`` run cl100k_base's ranks under those models'
patterns (bpe-tui's pre-tokenizer of each family, over ranks of the right size). Parallel
speed-up needs an idle second core as fast as the first: the load average, two threads of
SHA-256 against one, and a warm encode on each core alone and on both at once, an encoder
each (``machine.per_core``: what threads of one process got then), are printed before and
after.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402
from bench_peers import CORPORA, documents  # noqa: E402
from machine import machine  # noqa: E402

from engine import Tokenizer  # noqa: E402
from engine.corpus.pretokenize import PATTERNS  # noqa: E402
from engine.corpus.sources import expand_inputs  # noqa: E402
from engine.encode.dataset import dataset_ids  # noqa: E402

FAMILIES = ["gpt2", "cl100k", "o200k", "llama3", "qwen2"]
SHAPES = ["one document", "documents", "flat documents", "text file", "JSONL file"]


def tokenizer(family: str) -> Tokenizer:
    """A fresh tokenizer of the family (empty caches): llama3 and qwen2 over cl100k's ranks."""
    if family in models.MODELS:
        return models.bpe_tui(family)
    vocab, merges, merge_ids = models.read("cl100k")
    tok = Tokenizer(vocab, merges, list(models.MODELS["cl100k"].special_tokens), PATTERNS[family], merge_ids=merge_ids)
    tok.direct = True
    return tok


def child(family: str, corpus: str, shape: str, threads: int, scratch: Path) -> dict[str, Any]:
    """One process: the cold and the warm call of one thread count, and its ids."""
    path = CORPORA / f"{corpus}.txt"
    text = path.read_bytes().decode("utf-8")
    tok = tokenizer(family)
    tiny = scratch / "tiny.txt"
    tiny.write_text("Hi there", encoding="utf-8")
    if shape == "JSONL file":
        path, tiny = scratch / f"{corpus}.jsonl", scratch / "tiny.jsonl"
        path.write_text("".join(json.dumps({"text": doc}) + "\n" for doc in documents(text)), encoding="utf-8")
        tiny.write_text(json.dumps({"text": "Hi there"}) + "\n", encoding="utf-8")

    def read(file: Path) -> Any:
        return dataset_ids(tok, expand_inputs([str(file)]), workers=threads)

    calls: dict[str, tuple[Callable[[Any], Any], Any, Any]] = {  # the call, what it is given, and first
        "one document": (tok.encode if threads == 1 else (lambda t: tok.encode_batch([t], threads)[0]), text, "Hi there"),
        "documents": (lambda docs: tok.encode_batch(docs, threads), documents(text), ["Hi there"]),
        "flat documents": (lambda docs: tok.encode_batch_flat(docs, threads), documents(text), ["Hi there"]),
        "text file": (read, path, tiny),
        "JSONL file": (read, path, tiny),
    }
    call, given, first = calls[shape]
    call(first)
    out: dict[str, Any] = {"bytes": len(text.encode("utf-8"))}
    digests = []
    for when in ("cold", "warm"):
        gc.collect()  # nothing of the last call freed in this one's time
        wall, cpu = time.perf_counter(), time.process_time()
        ids = call(given)
        out[when] = (time.perf_counter() - wall, time.process_time() - cpu)
        if shape == "flat documents":
            data = ids.ids.tobytes() + ids.offsets.tobytes()
        elif shape.endswith("file"):
            data = ids.ids
        else:
            data = json.dumps(ids).encode()
        digests.append(hashlib.blake2b(data).hexdigest())
        del ids, data  # a file's ids are its data: the warm call is not to find them held
    if digests[0] != digests[1]:
        raise SystemExit(f"{family} {corpus} {shape}: the warm call's ids differ from the cold call's")
    out["ids"] = digests[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="processes per cell, the best kept (default 3)")
    parser.add_argument("--families", nargs="+", default=FAMILIES, choices=FAMILIES)
    parser.add_argument("--corpora", nargs="+", default=["en-mix-6m", "zh-xiyouji"])
    parser.add_argument("--shapes", nargs="+", default=SHAPES, choices=SHAPES)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        family, corpus, shape, threads = args.child
        with tempfile.TemporaryDirectory() as scratch:
            print(json.dumps(child(family, corpus, shape, int(threads), Path(scratch))))
        return
    print(f"before: {machine()}")
    print(
        "| family | corpus | shape | | "
        + " | ".join(f"{n} thread{'s' * (n > 1)}" for n in args.threads)
        + " | "
        + " | ".join(f"{n} / 1" for n in args.threads[1:])
        + " |"
    )
    print(
        "| --- | --- | --- | --- | "
        + " | ".join("---:" for _ in args.threads)
        + " | "
        + " | ".join("---:" for _ in args.threads[1:])
        + " |"
    )
    for family in args.families:
        for corpus in args.corpora:
            for shape in args.shapes:
                best: dict[tuple[int, str], tuple[float, float]] = {}
                ids: dict[int, str] = {}
                size = 0
                for r in range(args.rounds):
                    order = args.threads[r % len(args.threads) :] + args.threads[: r % len(args.threads)]
                    for n in order:
                        command = [sys.executable, __file__, "--child", family, corpus, shape, str(n)]
                        done = json.loads(subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout)
                        size, ids[n] = done["bytes"], done["ids"]
                        for when in ("cold", "warm"):
                            wall, cpu = done[when]
                            old = best.get((n, when), (wall, cpu))
                            best[n, when] = (min(old[0], wall), min(old[1], cpu))
                assert len(set(ids.values())) == 1, f"{family}, {corpus}, {shape}: the threads' ids differ"
                for when in ("cold", "warm"):
                    one = best[args.threads[0], when][0]
                    cells = [f"{size / 1e6 / best[n, when][0]:.1f} ({best[n, when][1]:.3f} s)" for n in args.threads]
                    ratios = [f"{one / best[n, when][0]:.2f}x" for n in args.threads[1:]]
                    print(
                        f"| {family} | {corpus} | {shape} | {when} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |", flush=True
                    )
    print(f"after: {machine()}")


if __name__ == "__main__":
    main()
