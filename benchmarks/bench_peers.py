"""Encoding and decoding against every installable peer, side by side in one run: bpe-tui,
tiktoken, gigatoken, fastokens, quicktok, riptoken, bpe-openai, tokie and kitoken, on GPT-2,
cl100k_base and o200k_base.

    python benchmarks/bench_peers.py [--rounds 2] [--models gpt2 cl100k o200k]
        [--corpora en-mix-6m zh-xiyouji | FILE.txt ...] [--threads 1 2] [--json results.json]

Every peer encodes with the same vocabulary and the pattern string tiktoken uses
(``models.py`` builds each model for every peer from the shared fixtures; quicktok and
bpe-openai load their own copies of cl100k_base and o200k_base, and have no GPT-2 here:
quicktok ships none, bpe-openai downloads it), and its ids are checked equal to tiktoken's
on every text it encodes; decoding must give the text back. A peer that does not install,
or cannot load a model, or whose ids differ, is named as such and left out of that cell.

Rows, for each model and corpus (read as bytes, so zh-xiyouji keeps its CRLF line ends):

- ``one document``: the whole file as one text;
- ``documents``: the file cut at blank lines (15,555 texts of 425 bytes on average on
  en-mix-6m, 3,311 of 600 on zh-xiyouji), the shape datasets hold;
- ``JSONL file``: those documents as a JSONL file, from the file to ids in memory: bpe-tui's
  ``dataset_ids`` (the reader and encoder of ``bpe-tui encode --file docs.jsonl --out
  ids.bin``, without the file it writes and syncs to disk), gigatoken's ``encode_files``; the
  others, which read no files, parse the lines with ``json.loads`` and encode the batch;
- ``decode``: the one document's ids back to text (one thread);
- ``start-up``: seconds to load the model (``load``) and to make the first, tiny encode
  (``first call``), timed apart from the rest.

Each peer is measured in a process of its own, cell by cell: one peer's memory never serves
another's calls (bpe-tui keeps the memory its large results free for the next, which in a
shared process had let a peer timed after it take 80 pages new to the process on GPT-4's
en-mix-6m rather than 3,800, and encode it cold in 33 ms rather than 43), and the Rust peers
size their thread pools once a process (``RAYON_NUM_THREADS``, ``FASTOKENS_BPE_THREADS``).
The parent writes the JSONL files and tiktoken's ids once, to check every peer's against.
Every encoder is loaded and **initialized before any timing**: one tiny encode through the
very call the row times (gigatoken and fastokens defer 50-150 ms of set-up to their first
call). Then the row's call is timed twice: *cold*, its first real encode in the process
(caches empty but for the tiny text), and *warm*, the same text a second time (the peers keep
caches across calls, so a cold encode is only the first one a process makes), the cold
call's ids still held, as a loop of ``ids = encode(text)`` holds the last call's; both are
checked after. Each timed call is given its text made anew from the file's bytes, as new
text comes: a str that a peer built with PyO3 has read (tiktoken, gigatoken, fastokens...)
keeps its UTF-8 inside it, and reading that very object again skips making it, which no new
text does. The calls: with one thread, bpe-tui ``encode_batch_flat([text])`` /
``encode_batch_flat(docs)``, tiktoken, riptoken, bpe-openai and kitoken ``encode`` (of each
document), gigatoken ``encode`` / ``encode_batch(parallel=False)``, fastokens ``encode_batch_flat`` (of a
list of one text for the one document), quicktok ``encode`` / ``encode_batch(docs, 1)``, tokie ``encode`` (of
each document); with more, every peer's batch call (bpe-tui ``encode_batch_flat([text],
workers=N)`` / ``encode_batch_flat(docs, workers=N)``, tiktoken and bpe-openai
``encode_batch(num_threads=N)``, gigatoken ``encode_batch``, fastokens ``encode_batch_flat``,
quicktok ``encode_batch(texts, N)``, riptoken ``encode_batch``, tokie ``encode_batch``,
kitoken ``encode_all``), on a list of one text for the one document. Each peer returns what
its call returns: lists of ints, NumPy or awkward arrays (gigatoken), flat arrays and offsets
(fastokens, quicktok, bpe-tui), Encodings (tokie). Where a peer has both, it is timed by the
call that gives one buffer, the form the fastest peers give; ``bench_encode.py`` times
bpe-tui's lists (``encode``, ``encode_batch``).

The peers take turns going first round by round. A cell is the best of ``--rounds``
processes (the least disturbed by other work on a shared machine): MB/s of UTF-8 text
(decode: of text made) by wall time, and the CPU seconds of the process (all its threads).
The ratio is bpe-tui's speed over the fastest peer's, by wall time and by CPU time. The load
average and what two threads of SHA-256 get over one (the most any parallel encoding could)
are printed with the run.

Where bpe-tui's time goes, and what stands in the way where a peer is faster: docs/speed.md
("Against every installable peer").
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
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

from engine.encode.dataset import DatasetIds  # noqa: E402

CORPORA = HERE.parent.parent / "shared" / "corpora"
PEERS = ["bpe-tui", "tiktoken", "gigatoken", "fastokens", "quicktok", "riptoken", "bpe-openai", "tokie", "kitoken"]
MODULES = {"bpe-tui": "engine", "quicktok": "quicktok", "bpe-openai": "bpe_openai"}
"""The module of each peer, where it is not the peer's name."""
SHAPES = ["one document", "documents", "JSONL file", "decode"]
BUNDLED = {"cl100k": "cl100k_base", "o200k": "o200k_base"}
"""The models quicktok and bpe-openai load from their own files, by their names."""
TINY = "Hi there"


def corpus_file(corpus: str) -> Path:
    """A corpus's file: a name in ``../shared/corpora`` (``en-mix-6m``), or the path of a
    UTF-8 text file (its name in the tables: the file's, less its suffix)."""
    path = Path(corpus)
    return path if path.suffix and path.is_file() else CORPORA / f"{corpus}.txt"


class Unavailable(Exception):
    """A peer cannot load this model here (the message says why)."""


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


def installed() -> list[str]:
    return [peer for peer in PEERS if importlib.util.find_spec(MODULES.get(peer, peer)) is not None]


# -- each peer's calls ---------------------------------------------------------------------
# A call takes what the row gives (a text, a list of texts, a file's path, ids) and returns
# the ids (or text) in the peer's own form; ``ids_of`` turns that into lists to compare.


def bpe_tui_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    from engine.corpus.sources import expand_inputs
    from engine.encode.dataset import dataset_ids

    tok = models.bpe_tui(name)

    def jsonl(path: Path) -> DatasetIds:
        return dataset_ids(tok, expand_inputs([str(path)]), workers=threads)

    return {  # the ids in one buffer, as the fastest peers give them
        "one document": lambda text: tok.encode_batch_flat([text], threads),
        "documents": lambda docs: tok.encode_batch_flat(docs, threads),
        "JSONL file": jsonl,
        "decode": tok.decode,
        "decode input": lambda flat: flat.ids,
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
    return {
        "one document": lambda text: tok.encode_batch_flat([text]),
        "documents": tok.encode_batch_flat,
        "JSONL file": lambda path: tok.encode_batch_flat(_read_jsonl(path)),
        "decode": tok.decode,
        "decode input": lambda flat: ids_of(flat, 1)[0],  # its decode takes a list
    }


def _each(encode: Callable[[str], Any], threads: int, batch: Callable[[list[str]], Any]) -> Callable[[list[str]], Any]:
    """One thread: ``encode`` of each document; more: the peer's batch call."""
    return (lambda docs: [encode(d) for d in docs]) if threads == 1 else batch


def _calls(
    one: Callable[[str], Any], docs: Callable[[list[str]], Any], decode: Callable[[Any], Any], threads: int
) -> dict[str, Callable[[Any], Any]]:
    """A peer that reads no files: one document through ``one`` (one thread) or ``docs`` of a
    list of it, the JSONL file's lines parsed and passed to ``docs``."""
    return {
        "one document": one if threads == 1 else (lambda text: docs([text])),
        "documents": docs,
        "JSONL file": lambda path: docs(_read_jsonl(path)),
        "decode": decode,
    }


def quicktok_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    import quicktok

    if name not in BUNDLED:
        raise Unavailable(f"quicktok ships no {name}")
    enc = quicktok.Tokenizer(BUNDLED[name], "")  # not get_encoding's tokenizer kept for the process: a fresh one
    return _calls(
        lambda text: enc.encode(text, allowed_special="all"), lambda docs: enc.encode_batch(docs, threads, True), enc.decode, threads
    )


def riptoken_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    import riptoken

    model = models.MODELS[name]
    enc = riptoken.CoreBPE(models.ranks(name), model.special_tokens, model.pattern)
    allowed = set(model.special_tokens)
    one = partial(enc.encode, allowed_special=allowed)
    docs = _each(one, threads, lambda docs: enc.encode_batch(docs, allowed))
    return _calls(one, docs, lambda ids: enc.decode_bytes(ids).decode("utf-8", "replace"), threads)


def bpe_openai_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    import bpe_openai

    if name not in BUNDLED:
        raise Unavailable(f"bpe-openai downloads {name} (no network here)")
    enc = bpe_openai.get_encoding(BUNDLED[name])
    one = partial(enc.encode, allowed_special="all")
    docs = _each(one, threads, lambda docs: enc.encode_batch(docs, num_threads=threads, allowed_special="all"))
    return _calls(one, docs, enc.decode, threads)


def tokie_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    import tokie

    if name == "gpt2":
        raise Unavailable("tokie's ids differ from tiktoken's under GPT-2 (its tokenizer.json as bpe-tui writes it)")
    enc = tokie.Tokenizer.from_json(str(scratch / f"{name}.json"))  # written by the parent

    def one(text: str) -> list[int]:
        return enc.encode(text, add_special_tokens=False).ids

    docs = _each(one, threads, partial(enc.encode_batch, add_special_tokens=False))
    return _calls(one, docs, enc.decode, threads)


def kitoken_calls(name: str, threads: int, scratch: Path) -> dict[str, Callable[[Any], Any]]:
    import kitoken

    enc = kitoken.Kitoken.from_tiktoken_file(str(models.tiktoken_file(name)))
    one = partial(enc.encode, encode_specials=True)
    docs = _each(one, threads, partial(enc.encode_all, encode_specials=True))
    return _calls(one, docs, lambda ids: enc.decode(ids).decode("utf-8", "replace"), threads)


CALLS = {
    "bpe-tui": bpe_tui_calls,
    "tiktoken": tiktoken_calls,
    "gigatoken": gigatoken_calls,
    "fastokens": fastokens_calls,
    "quicktok": quicktok_calls,
    "riptoken": riptoken_calls,
    "bpe-openai": bpe_openai_calls,
    "tokie": tokie_calls,
    "kitoken": kitoken_calls,
}


def _read_jsonl(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def ids_of(out: Any, count: int) -> list[list[int]]:
    """A call's ids as ``count`` lists of ints (one a document)."""
    import numpy as np

    if isinstance(out, DatasetIds):  # bpe-tui's: documents follow each other
        return [np.frombuffer(out.ids, dtype=out.dtype).tolist()]
    if isinstance(out, tuple):  # flat ids and offsets: fastokens' as bytes, quicktok's as arrays
        ids, offsets = (np.frombuffer(b, dtype=t) if isinstance(b, bytes) else b for b, t in zip(out, (np.uint32, np.uint64), strict=True))
        return [ids[offsets[k] : offsets[k + 1]].tolist() for k in range(count)]
    if type(out).__module__.startswith("awkward"):
        import awkward as ak

        return [list(row) for row in ak.to_list(out)]
    if isinstance(out, np.ndarray):
        return [out.tolist()]
    if hasattr(out, "ids"):  # tokie's Encoding
        return [list(out.ids)]
    if out and hasattr(out[0], "ids"):
        return [list(e.ids) for e in out]
    if out and isinstance(out[0], list):
        return [list(row) for row in out]
    return [list(out)]


# -- the child: one peer in one cell -------------------------------------------------------


def child(args: argparse.Namespace) -> None:
    """One process: one peer, thread count, model, corpus and shape. The peer is loaded and
    initialized (one tiny encode through the row's call), then encodes the row's input twice,
    cold and warm, both results kept until both are checked (so that no memory the check
    frees is there for the warm call to take). Prints the results and the notes on the peer."""
    peer, threads, name, corpus, shape = args.peer, args.child, args.models[0], args.corpora[0], args.shape
    scratch: Path = args.scratch
    path = corpus_file(corpus)
    raw, corpus = path.read_bytes(), path.stem
    text = raw.decode("utf-8")

    def given() -> Any:
        """The row's input made anew from the file's bytes: no encoder has read its strs.
        A str read through PyO3 (tiktoken, gigatoken, fastokens...) keeps its UTF-8 in it
        for good, and an encode of that very object again skips making it, as no new text
        does: en-mix-6m as one new str takes gigatoken 24 ms warm, the same str 13."""
        fresh = raw.decode("utf-8")
        return {"one document": fresh, "documents": documents(fresh), "JSONL file": scratch / f"{corpus}.jsonl"}[shape]

    tiny = {"one document": TINY, "documents": [TINY, TINY], "JSONL file": scratch / "tiny.jsonl"}[shape]
    size = len(raw) if shape == "one document" else sum(len(d.encode("utf-8")) for d in documents(text))
    row = dict(threads=threads, corpus=corpus, model=name, bytes=size, peer=peer)
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    try:
        load, _, calls = timed(partial(CALLS[peer], name, threads, scratch))
    except Unavailable as e:
        print(json.dumps({"results": [], "notes": [f"{peer}: {e}"]}))
        return
    first, _, _ = timed(partial(calls[shape], tiny))
    if shape == "one document":
        results.append(dict(row, shape="start-up", warm=False, wall=load, cpu=first))
    timings, outs = [], []
    try:
        for _ in ("cold", "warm"):
            wall, cpu, out = timed(partial(calls[shape], given()))
            timings.append((wall, cpu))
            outs.append(out)
    except Exception as e:  # a limit of the peer's (bpe-openai takes no text of a million characters)
        notes.append(f"{peer}: {type(e).__name__}: {str(e)[:100]} ({name}, {corpus}, {shape}); left out")
        timings = []
    reference = _reference(scratch / _reference_name(name, corpus, shape)) if timings else []
    if timings and not all(_same(out, reference) for out in outs):
        notes.append(f"{peer}: ids differ from tiktoken's ({name}, {corpus}, {shape}); left out")
        timings = []
    results += [dict(row, shape=shape, warm=warm, wall=wall, cpu=cpu) for warm, (wall, cpu) in zip((False, True), timings, strict=False)]
    if timings and shape == "one document" and threads == 1:  # decode what was encoded
        ids = calls.get("decode input", lambda out: out)(outs[0])  # in the form the peer decodes, not timed
        del outs
        wall, cpu, back = timed(partial(calls["decode"], ids))
        if back == text:
            results.append(dict(row, shape="decode", warm=False, wall=wall, cpu=cpu))
        else:
            notes.append(f"{peer}: decoding does not give the text back ({name}, {corpus}); left out")
    print(json.dumps({"results": results, "notes": notes}))


def _reference_name(name: str, corpus: str, shape: str) -> str:
    return f"{name}-{corpus}-{'one' if shape == 'one document' else 'documents'}.npz"


def prepare(scratch: Path, name: str, corpus: str) -> None:
    """What the children of a model and corpus read, made once: the JSONL file, bpe-tui's
    ``tokenizer.json`` for tokie, and tiktoken's ids of the texts to check every peer's
    against (the one document, and each document)."""
    import numpy as np

    path = corpus_file(corpus)
    text, corpus = path.read_bytes().decode("utf-8"), path.stem
    docs = documents(text)
    jsonl = scratch / f"{corpus}.jsonl"
    if not jsonl.exists():
        with open(jsonl, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs)
    if not (scratch / f"{name}.json").exists():
        models.bpe_tui(name).save(scratch / f"{name}.json")
    encoding = models.tiktoken_encoding(name)
    for shape, texts in (("one document", [text]), ("documents", docs)):
        rows = [encoding.encode(t, allowed_special="all") for t in texts]
        offsets = np.cumsum([0] + [len(r) for r in rows], dtype=np.int64)
        ids = np.fromiter((i for r in rows for i in r), dtype=np.uint32, count=int(offsets[-1]))
        np.savez(scratch / _reference_name(name, corpus, shape), ids=ids, offsets=offsets)


def _reference(path: Path) -> list[list[int]]:
    import numpy as np

    with np.load(path) as saved:
        ids, offsets = saved["ids"].tolist(), saved["offsets"].tolist()
    return [ids[a:b] for a, b in zip(offsets, offsets[1:], strict=False)]


def _same(out: Any, reference: list[list[int]]) -> bool:
    """Whether a call's ids are tiktoken's: each document's, or all of them one after the
    other in an ids file."""
    ids = ids_of(out, len(reference))
    if len(ids) == 1 and len(reference) > 1:
        return ids[0] == [i for row in reference for i in row]
    return ids == reference


# -- the parent: runs the children, prints the table -----------------------------------------


MODEL_ORDER = ["gpt2", "cl100k", "o200k"]


def table(results: list[dict[str, Any]]) -> str:
    """The rows of every thread count, model, corpus, shape, cold and warm: each peer's MB/s
    by wall time, the fastest peer, and bpe-tui's speed over it by wall and CPU time."""
    peers = [p for p in PEERS if any(r["peer"] == p for r in results)]
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for r in results:
        if r["shape"] != "start-up":
            cells.setdefault((r["threads"], r["model"], r["corpus"], r["shape"], r["warm"]), {})[r["peer"]] = r
    lines = [
        "| threads | model | corpus | shape | | " + " | ".join(peers) + " | fastest peer | bpe-tui / fastest (wall, CPU) |",
        "| ---: | --- | --- | --- | --- | " + " | ".join("---:" for _ in peers) + " | --- | ---: |",
    ]
    for key in sorted(cells, key=lambda k: (k[0], MODEL_ORDER.index(k[1]), k[2], SHAPES.index(k[3]), k[4])):
        row = cells[key]
        others = [p for p in peers[1:] if p in row]
        if "bpe-tui" not in row or not others:
            continue
        fastest = min(others, key=lambda p: row[p]["wall"])
        ours = row["bpe-tui"]
        shown = [f"{r['bytes'] / 1e6 / r['wall']:.1f}" if (r := row.get(p)) else "" for p in peers]
        ratio = f"{row[fastest]['wall'] / ours['wall']:.2f}x, {min(row[p]['cpu'] for p in others) / ours['cpu']:.2f}x"
        when = "warm" if key[4] else "cold"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {when} | " + " | ".join(shown) + f" | {fastest} | {ratio} |")
    return "\n".join(lines)


def startup_table(results: list[dict[str, Any]]) -> str:
    """Each peer's seconds to load each model, and to make its first, tiny encode (one thread)."""
    peers = [p for p in PEERS if any(r["peer"] == p for r in results)]
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        if r["shape"] == "start-up" and r["threads"] == 1:
            cells.setdefault(r["model"], {})[r["peer"]] = r
    lines = ["| model | " + " | ".join(peers) + " |", "| --- | " + " | ".join("---:" for _ in peers) + " |"]
    for name in sorted(cells, key=MODEL_ORDER.index):
        shown = [f"{r['wall']:.3f} + {r['cpu']:.3f}" if (r := cells[name].get(p)) else "" for p in peers]
        lines.append(f"| {name} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="processes per cell, the best kept (default 2)")
    parser.add_argument("--models", nargs="+", default=MODEL_ORDER, choices=list(models.MODELS))
    parser.add_argument("--corpora", nargs="+", default=["en-mix-6m", "zh-xiyouji"], help="names in ../shared/corpora, or text files")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count() or 1])
    parser.add_argument("--shapes", nargs="+", default=SHAPES[:3], choices=SHAPES[:3])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--peer", choices=PEERS, help=argparse.SUPPRESS)
    parser.add_argument("--shape", choices=SHAPES[:3], help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    for name in args.models:  # the peers' plain rank files, written once
        models.tiktoken_file(name)
    peers, missing = installed(), [p for p in PEERS if p not in installed()]
    print(f"before: {machine()}")
    results, notes = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        (scratch / "tiny.jsonl").write_text(json.dumps({"text": TINY}) + "\n", encoding="utf-8")
        for threads in args.threads:
            env = dict(os.environ, RAYON_NUM_THREADS=str(threads), FASTOKENS_BPE_THREADS=str(threads))
            for name in args.models:
                for corpus in args.corpora:
                    prepare(scratch, name, corpus)
                    for shape in args.shapes:
                        for r in range(args.rounds):
                            for peer in peers[r % len(peers) :] + peers[: r % len(peers)]:
                                command = [sys.executable, __file__, "--child", str(threads), "--peer", peer, "--shape", shape]
                                command += ["--models", name, "--corpora", corpus, "--scratch", str(scratch)]
                                run = subprocess.run(command, env=env, capture_output=True, text=True)
                                sys.stderr.write(run.stderr)
                                if run.returncode:  # a peer that crashes (tokie panics on some texts) sits the cell out
                                    why = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
                                    notes.add(f"{peer}: its process failed ({name}, {Path(corpus).stem}, {shape}): {why[:100]}; left out")
                                    continue
                                done = json.loads(run.stdout)
                                results += done["results"]
                                notes.update(done["notes"])
                    print(f"  {threads} thread(s): {corpus} {name} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    best: dict[tuple[Any, ...], dict[str, Any]] = {}  # the best of the rounds, wall and CPU apart
    for r in results:
        key = (r["threads"], r["model"], r["corpus"], r["shape"], r["warm"], r["peer"])
        if key in best:
            best[key]["wall"] = min(best[key]["wall"], r["wall"])
            best[key]["cpu"] = min(best[key]["cpu"], r["cpu"])
        else:
            best[key] = dict(r)
    results = list(best.values())
    print(f"after: {machine()}")
    print(f"{args.rounds} rounds, best of each; MB/s by wall time\n")
    print(table(results))
    print("\nStart-up, one thread: seconds to load the model + seconds of the first, tiny encode\n")
    print(startup_table(results))
    for note in sorted(notes) + [f"{p}: not installed" for p in missing]:
        print(f"- {note}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
