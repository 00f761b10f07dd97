"""Encoding and decoding against every installable peer, side by side in one run: bpe-tui,
tiktoken, gigatoken and fastokens, on GPT-2, cl100k_base and o200k_base.

    python benchmarks/bench_peers.py [--rounds 3] [--models gpt2 cl100k o200k]
        [--corpora en-mix-6m zh-xiyouji] [--threads 1 2] [--json results.json]

Every peer encodes with the same vocabulary and the pattern string tiktoken uses
(``models.py`` builds each model for every peer from the shared fixtures), and its ids are
checked equal to bpe-tui's on every text it encodes; decoding must give the text back.

Rows, for each model and corpus (read as bytes, so zh-xiyouji keeps its CRLF line ends):

- ``one document``: the whole file as one text;
- ``documents``: the file cut at blank lines (15,555 texts of 425 bytes on average on
  en-mix-6m, 3,311 of 600 on zh-xiyouji), the shape datasets hold;
- ``JSONL file``: those documents as a JSONL file, from the file to ids: bpe-tui's
  ``encode_dataset`` (what ``bpe-tui encode --file docs.jsonl --out ids.bin`` runs), gigatoken's
  ``encode_files``; tiktoken and fastokens, which read no files, parse the lines with
  ``json.loads`` and encode the batch;
- ``decode``: the one document's ids back to text (one thread).

Each cell is measured in a process of its own (the Rust peers size their thread pools once
a process: ``RAYON_NUM_THREADS``, ``FASTOKENS_BPE_THREADS``), every peer's first encode
there: cold, as the peers keep caches across calls and gigatoken even across its tokenizers.
The calls: with one thread, bpe-tui ``encode`` / ``encode_batch(docs, workers=1)``, tiktoken
``encode`` (of each document), gigatoken ``encode`` / ``encode_batch(parallel=False)``,
fastokens ``encode`` / ``encode_batch_flat``; with more, every peer's batch call (bpe-tui
``encode_batch(texts, workers=N)``, tiktoken ``encode_batch(num_threads=N)``, gigatoken
``encode_batch``, fastokens ``encode_batch_flat``), on a list of one text for the one
document. Each peer returns what its call returns: lists of ints (bpe-tui, tiktoken), NumPy
or awkward arrays (gigatoken), flat bytes (fastokens' batches).

The tokenizers are loaded before any timing; the peers take turns going first process by
process. A cell is the best of ``--rounds`` processes (the least disturbed by other work on a
shared machine): MB/s of UTF-8 text (decode: of text made) by wall time, and the CPU seconds
of the process (all its threads). The ratio is bpe-tui's speed over the fastest peer's, by
wall time and by CPU time. The load average and what two threads of SHA-256 get over one
(the most any parallel encoding could) are printed with the run.

Where bpe-tui's time goes, and what stands in the way where a peer is faster: docs/speed.md
("Against every installable peer").
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402
from machine import machine  # noqa: E402

CORPORA = HERE.parent.parent / "shared" / "corpora"
PEERS = ["bpe-tui", "tiktoken", "gigatoken", "fastokens"]
SHAPES = ["one document", "documents", "JSONL file", "decode"]


def documents(text: str) -> list[str]:
    """The text cut at blank lines, separators dropped."""
    return [d for d in re.split(r"\r?\n\r?\n", text) if d.strip()]


def timed(f: Callable[[], Any]) -> tuple[float, float, Any]:
    """``(wall seconds, CPU seconds of the process, f())``, after a garbage collection (so
    none left over from the last call lands in this one's time)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    out = f()
    return time.perf_counter() - wall, time.process_time() - cpu, out


# -- each peer's calls ---------------------------------------------------------------------
# A call takes what the row gives (a text, a list of texts, a file's path, ids) and returns
# the ids (or text) in the peer's own form; ``ids_of`` turns that into lists to compare.


def bpe_tui_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    from engine.corpus.sources import expand_inputs
    from engine.encode.dataset import encode_dataset

    tok = models.bpe_tui(name)

    def jsonl(path: Path) -> Path:
        out = scratch / "ids.bin"
        encode_dataset(tok, expand_inputs([str(path)]), out, workers=threads)
        return out

    one = tok.encode if threads == 1 else (lambda text: tok.encode_batch([text], threads)[0])
    return {
        "one document": one,
        "documents": lambda docs: tok.encode_batch(docs, threads),
        "JSONL file": jsonl,
        "decode": tok.decode,
    }


def tiktoken_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    enc = models.tiktoken_encoding(name)

    def batch(docs: list[str]) -> list[list[int]]:
        if threads == 1:
            return [enc.encode(d, allowed_special="all") for d in docs]
        return enc.encode_batch(docs, num_threads=threads, allowed_special="all")

    return {
        "one document": lambda text: batch([text])[0],
        "documents": batch,
        "JSONL file": lambda path: batch(_read_jsonl(path)),
        "decode": enc.decode,
    }


def gigatoken_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    import gigatoken

    tok = models.gigatoken_tokenizer(name)
    parallel = threads > 1
    return {
        "one document": tok.encode if not parallel else (lambda text: tok.encode_batch([text], parallel=True)),
        "documents": lambda docs: tok.encode_batch(docs, parallel=parallel),
        "JSONL file": lambda path: tok.encode_files(gigatoken.JsonlFileSource([str(path)]), parallel=parallel),
        "decode": lambda ids: tok.decode(ids).decode("utf-8", "replace"),
    }


def fastokens_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    tok = models.fastokens_tokenizer(name)
    one = (lambda text: tok.encode(text).ids) if threads == 1 else (lambda text: tok.encode_batch_flat([text]))
    return {
        "one document": one,
        "documents": tok.encode_batch_flat,
        "JSONL file": lambda path: tok.encode_batch_flat(_read_jsonl(path)),
        "decode": tok.decode,
    }


CALLS = {"bpe-tui": bpe_tui_calls, "tiktoken": tiktoken_calls, "gigatoken": gigatoken_calls, "fastokens": fastokens_calls}


def _read_jsonl(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def ids_of(out: Any, count: int) -> list[list[int]]:
    """A call's ids as ``count`` lists of ints (one a document)."""
    import numpy as np

    if isinstance(out, Path):  # bpe-tui's ids file (its sidecar names the dtype): documents follow each other
        dtype = json.loads(out.with_name(out.name + ".json").read_text())["dtype"]
        return [np.fromfile(out, dtype=dtype).tolist()]
    if isinstance(out, tuple):  # fastokens' flat ids and offsets
        ids, offsets = (np.frombuffer(b, dtype=t) for b, t in zip(out, (np.uint32, np.uint64), strict=True))
        return [ids[offsets[k] : offsets[k + 1]].tolist() for k in range(count)]
    if type(out).__module__.startswith("awkward"):
        import awkward as ak

        return [list(row) for row in ak.to_list(out)]
    if isinstance(out, np.ndarray):
        return [out.tolist()]
    if out and isinstance(out[0], list):
        return [list(row) for row in out]
    return [list(out)]


# -- the child: one thread count -------------------------------------------------------------


def child(args: argparse.Namespace) -> None:
    """One process: one thread count, model, corpus and shape, every peer in turn (order
    rotated by ``--round``), each peer's first encode in the process. tiktoken, gigatoken
    and fastokens keep caches across calls, gigatoken's even across its tokenizers in one
    process (a second, fresh tokenizer encodes en-mix-6m's documents 6x faster than the
    first), so a cold encode is only the first one a process makes."""
    threads, name, corpus, shape = args.child, args.models[0], args.corpora[0], args.shape
    text = (CORPORA / f"{corpus}.txt").read_bytes().decode("utf-8")
    docs = documents(text)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        jsonl = scratch / f"{corpus}.jsonl"
        with open(jsonl, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs)
        inputs = {"one document": text, "documents": docs, "JSONL file": jsonl}
        size = len(text.encode("utf-8")) if shape == "one document" else sum(len(d.encode("utf-8")) for d in docs)
        reference = {"one document": [text], "documents": docs, "JSONL file": docs}[shape]
        reference_ids = models.bpe_tui(name).encode_batch(reference, 1)  # a tokenizer of its own: not timed
        order = PEERS[args.round % len(PEERS) :] + PEERS[: args.round % len(PEERS)]
        calls = {peer: CALLS[peer](name, threads, scratch) for peer in order}  # loaded before any timing
        for peer in order:
            wall, cpu, out = timed(partial(calls[peer][shape], inputs[shape]))
            _check(f"{peer}, {name}, {corpus}, {shape}", out, text, reference_ids)
            results.append(dict(threads=threads, corpus=corpus, model=name, shape=shape, peer=peer, wall=wall, cpu=cpu, bytes=size))
            if shape == "one document" and threads == 1:  # decode what was encoded
                wall, cpu, back = timed(partial(calls[peer]["decode"], out))
                _check(f"{peer}, {name}, {corpus}, decode", back, text, reference_ids)
                results.append(dict(threads=1, corpus=corpus, model=name, shape="decode", peer=peer, wall=wall, cpu=cpu, bytes=size))
    print(json.dumps(results))


def _check(where: str, out: Any, text: str, reference: list[list[int]]) -> None:
    """The ids are bpe-tui's encode_batch's (of a tokenizer of its own, one thread): each
    document's, or all of them one after the other in an ids file; decoding gives the text
    back."""
    if where.endswith("decode"):
        assert out == text, f"{where}: the decoded text differs"
        return
    ids = ids_of(out, len(reference))
    if len(ids) == 1 and len(reference) > 1:
        ids = [[i for row in ids for i in row]]
        reference = [[i for row in reference for i in row]]
    assert ids == reference, f"{where}: ids differ from bpe-tui's encode_batch"


# -- the parent: runs the children, prints the table -----------------------------------------


def table(results: list[dict[str, Any]]) -> str:
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for r in results:
        cells.setdefault((r["threads"], r["model"], r["corpus"], r["shape"]), {})[r["peer"]] = r
    lines = [
        "| threads | model | corpus | shape | " + " | ".join(PEERS) + " | bpe-tui / fastest peer (wall, CPU) |",
        "| ---: | --- | --- | --- | " + " | ".join("---:" for _ in PEERS) + " | ---: |",
    ]
    for key in sorted(cells, key=lambda k: (k[0], ["gpt2", "cl100k", "o200k"].index(k[1]), k[2], SHAPES.index(k[3]))):
        row = cells[key]
        peers = [p for p in PEERS[1:] if p in row]
        fastest_wall = min(row[p]["wall"] for p in peers)
        fastest_cpu = min(row[p]["cpu"] for p in peers)
        ours = row["bpe-tui"]
        shown = [f"{r['bytes'] / 1e6 / r['wall']:.1f} ({r['cpu']:.2f} s)" if (r := row.get(p)) else "" for p in PEERS]
        ratio = f"{fastest_wall / ours['wall']:.2f}x, {fastest_cpu / ours['cpu']:.2f}x"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | " + " | ".join(shown) + f" | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="processes per cell, the best kept (default 2)")
    parser.add_argument("--models", nargs="+", default=["gpt2", "cl100k", "o200k"], choices=list(models.MODELS))
    parser.add_argument("--corpora", nargs="+", default=["en-mix-6m", "zh-xiyouji"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count() or 1])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--shape", choices=SHAPES[:3], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    for name in args.models:  # the peers' plain rank files, written once
        models.tiktoken_file(name)
    print(f"before: {machine()}")
    results = []
    for threads in args.threads:
        env = dict(os.environ, RAYON_NUM_THREADS=str(threads), FASTOKENS_BPE_THREADS=str(threads))
        for name in args.models:
            for corpus in args.corpora:
                for shape in SHAPES[:3]:
                    for r in range(args.rounds):
                        command = [sys.executable, __file__, "--child", str(threads), "--round", str(r), "--shape", shape]
                        command += ["--models", name, "--corpora", corpus]
                        done = subprocess.run(command, env=env, check=True, stdout=subprocess.PIPE, text=True)
                        results += json.loads(done.stdout)
                print(f"  {threads} thread(s): {corpus} {name} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    best: dict[tuple[Any, ...], dict[str, Any]] = {}  # the best of the rounds, wall and CPU apart
    for r in results:
        key = (r["threads"], r["model"], r["corpus"], r["shape"], r["peer"])
        if key in best:
            best[key]["wall"] = min(best[key]["wall"], r["wall"])
            best[key]["cpu"] = min(best[key]["cpu"], r["cpu"])
        else:
            best[key] = dict(r)
    results = list(best.values())
    print(f"after: {machine()}")
    print(f"{args.rounds} rounds, best of each; MB/s by wall time (CPU seconds of the process)\n")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
