"""``encode --file ... --out IDS``: the ids of every document, as ``Tokenizer.encode`` gives
them, in one file whatever the number of workers; bad input refused with nothing written."""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Tokenizer
from engine.corpus.sources import expand_inputs
from engine.encode import dataset
from engine.encode import tokenizer as T
from engine.encode._encoder_core import join_packed
from engine.encode.dataset import dataset_ids, encode_dataset, id_dtype
from engine.errors import CorpusError
from tests.conftest import CLI_ENV, ROOT, fixture_file, refused, run_cli

DOCS = [
    "Once upon a time there was a tiny robot.\n\nIt   liked  naps, and it's happy!",
    "孙悟空 大闹天宫 🙂 ça va? 1234567 tokens<|endoftext|>after",
    "",
    "   leading spaces and trailing ones   \n",
]


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("gpt2")
    (d / "vocab.json").write_bytes(fixture_file("gpt2_vocab.json").read_bytes())
    (d / "merges.txt").write_bytes(fixture_file("gpt2_merges.txt").read_bytes())
    return d


@pytest.fixture(scope="module")
def gpt2(gpt2_dir) -> Tokenizer:
    return Tokenizer.load(gpt2_dir)


@pytest.fixture
def corpus(tmp_path) -> tuple[list[Path], list[str]]:
    """Files of every kind read, and their documents in the order they are encoded (by path)."""
    text = fixture_file("tinystories_sample.txt").read_text(encoding="utf-8")[:20000] + DOCS[1]
    a = tmp_path / "a.txt"
    a.write_text(text, encoding="utf-8")
    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps({"body": d, "n": i}) + "\n" for i, d in enumerate(DOCS)), encoding="utf-8")
    c = tmp_path / "c.jsonl.gz"
    c.write_bytes(gzip.compress("".join(json.dumps({"body": d}) + "\n" for d in reversed(DOCS)).encode()))
    d = tmp_path / "d.txt.gz"
    d.write_bytes(gzip.compress(DOCS[0].encode()))
    return [a, b, c, d], [text, *DOCS, *reversed(DOCS), DOCS[0]]


def expected_ids(tokenizer: Tokenizer, docs: list[str], eot: int | None) -> list[int]:
    ids: list[int] = []
    for doc in docs:
        ids += tokenizer.encode(doc)
        if eot is not None:
            ids.append(eot)
    return ids


def read_ids(path: Path, dtype: str = "<u2") -> list[int]:
    return np.fromfile(path, dtype=dtype).tolist()


@pytest.mark.parametrize("eot", [False, True])
@pytest.mark.parametrize("workers", [1, 2])
def test_ids_are_encode_of_each_document(gpt2, corpus, tmp_path, monkeypatch, eot, workers):
    monkeypatch.setattr(dataset, "BATCH_CHARS", 700)  # many batches, and the text file in many blocks
    files, docs = corpus
    out = tmp_path / "ids.bin"
    eot_id = gpt2.special_ids["<|endoftext|>"] if eot else None
    summary = encode_dataset(gpt2, expand_inputs(files), out, text_field="body", eot=eot_id, workers=workers)
    want = expected_ids(gpt2, docs, eot_id)
    assert read_ids(out) == want
    assert (summary.tokens, summary.documents, summary.dtype) == (len(want), len(docs), "uint16")
    assert summary.bytes_read == sum(f.stat().st_size for f in files)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*(f.name for f in files), "ids.bin", "ids.bin.json"])
    held = dataset_ids(gpt2, expand_inputs(files), text_field="body", eot=eot_id, workers=workers)
    assert held.ids == out.read_bytes() and held.ids.readonly
    assert (held.dtype, held.tokens, held.documents, held.bytes_read, held.bad_records) == (
        summary.dtype,
        summary.tokens,
        summary.documents,
        summary.bytes_read,
        summary.bad_records,
    )


def test_ids_in_memory_refuse_bad_input_as_the_file_does(gpt2, tmp_path):
    """``dataset_ids`` reads and skips as ``encode_dataset`` does: a bad record named, or
    skipped and counted."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "one"}\n{"text": 2}\n{"text": "three"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="docs.jsonl: line 2: .text. is a number"):
        dataset_ids(gpt2, expand_inputs([path]))
    held = dataset_ids(gpt2, expand_inputs([path]), eot=50256, skip_bad_records=True, workers=2)
    assert np.frombuffer(held.ids, held.dtype).tolist() == expected_ids(gpt2, ["one", "three"], 50256)
    assert (held.documents, held.bad_records) == (2, 1)


@settings(max_examples=60)
@given(
    width=st.sampled_from([2, 4]),
    counts=st.lists(st.integers(0, 40), max_size=12),
    seed=st.integers(0, 2**32 - 1),
    room=st.sampled_from([0, 8, 1 << 21]),
)
def test_ids_in_memory_are_the_batches_joined(width, counts, seed, room):
    """``dataset_ids`` joins its batches as they come (``join_packed``): the same bytes as
    ``b"".join``, read as ids of their width; parts that are not whole ids are refused."""
    rng = np.random.default_rng(seed)
    dtype = {2: np.uint16, 4: np.uint32}[width]
    parts = [rng.integers(0, 1 << (8 * width), n, dtype=dtype).tobytes() for n in counts]
    joined = memoryview(join_packed(iter(parts), width, room))
    assert joined.readonly and joined.itemsize == width and joined.cast("B") == b"".join(parts)
    assert joined.tolist() == np.frombuffer(b"".join(parts), dtype).tolist()
    with pytest.raises(ValueError, match="not whole ids"):
        join_packed([*parts, b"\0" * (width + 1)], width, room)


def test_ids_in_memory_take_the_memory_of_the_last_freed():
    """A dataset's ids made as the last were freed are joined in their memory (kept for the
    next), not in memory new to the process."""
    parts = [bytes(range(256)) * 1024] * 8  # 2 MB
    first = np.frombuffer(join_packed(parts, 4, 0), np.uint32)
    at = first.ctypes.data
    del first
    again = np.frombuffer(join_packed(parts, 4, 0), np.uint32)
    assert again.ctypes.data == at and again.tobytes() == b"".join(parts)


PIECES = st.sampled_from(
    [" ", "  ", "\n", "\n\n", "\t", "'s", "'ll", "hello", " world", "123", "孙悟空", "é", "\u0301", "🙂", "<|endoftext|>", "<|endof", "!?"]
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    docs=st.lists(st.lists(PIECES | st.text(max_size=6), max_size=40).map("".join), min_size=1, max_size=4),
    batch=st.integers(1, 64),
)
def test_any_block_size_encodes_like_whole_documents(gpt2, tmp_path, docs, batch):
    """Plain text read in blocks of any size, JSONL lines batched in any number: the ids of
    each whole document, as ``Tokenizer.encode`` gives them."""
    text = tmp_path / "t.txt"
    text.write_text(docs[0], encoding="utf-8", newline="")
    lines = tmp_path / "l.jsonl"
    lines.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    saved, dataset.BATCH_CHARS = dataset.BATCH_CHARS, batch
    try:
        encode_dataset(gpt2, expand_inputs([lines, text]), tmp_path / "ids.bin", eot=50256, workers=1)
    finally:
        dataset.BATCH_CHARS = saved
    assert read_ids(tmp_path / "ids.bin") == expected_ids(gpt2, [*docs, docs[0]], 50256)


def test_cli_one_and_two_workers_write_the_same_bytes(gpt2_dir, gpt2, corpus, tmp_path):
    files, docs = corpus
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"ids{workers}.bin"
        done = run_cli(
            "encode",
            "--model",
            str(gpt2_dir),
            "--file",
            *map(str, files),
            "--text-field",
            "body",
            "--eot",
            "--workers",
            workers,
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        assert f"of {len(docs)} documents" in done.stdout and str(out) in done.stdout
        outs.append(out)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    eot = gpt2.special_ids["<|endoftext|>"]
    assert read_ids(outs[1]) == expected_ids(gpt2, docs, eot)
    side = json.loads((tmp_path / "ids2.bin.json").read_text())
    assert side == {
        "file": "ids2.bin",
        "format": "raw",
        "header_bytes": 0,
        "dtype": "uint16",
        "byte_order": "little",
        "tokens": len(expected_ids(gpt2, docs, eot)),
        "documents": len(docs),
        "bad_records_skipped": 0,
        "model": str(gpt2_dir),
        "model_digest": gpt2.digest(),
        "vocab_size": 50257,
        "eot": 50256,
        "text_field": "body",
        "inputs": [str(f) for f in files],
        "skipped_inputs": [],
    }


def test_glob_input_and_npy_output_load_with_numpy(gpt2_dir, gpt2, corpus, tmp_path):
    files, docs = corpus
    out = tmp_path / "ids.npy"
    done = run_cli("encode", "--model", str(gpt2_dir), "--file", str(tmp_path / "*.jsonl*"), "--text-field", "body", "--out", str(out))
    assert done.returncode == 0, done.stderr
    ids = np.load(out)
    assert ids.dtype == np.uint16
    assert ids.tolist() == expected_ids(gpt2, [*DOCS, *reversed(DOCS)], None)
    side = json.loads((tmp_path / "ids.npy.json").read_text())
    assert (side["format"], side["tokens"], side["eot"]) == ("npy", len(ids), None)
    assert np.memmap(out, dtype=np.uint16, mode="r", offset=side["header_bytes"]).tolist() == ids.tolist()


def test_dtype_is_the_smallest_that_holds_every_id(gpt2, tmp_path):
    assert id_dtype(gpt2) == "uint16"
    base = 70000  # ids above 65535: uint32
    wide = Tokenizer({base + b: bytes([b]) for b in range(256)}, [], ["<|endoftext|>"])
    assert id_dtype(wide) == "uint32"
    src = tmp_path / "t.txt"
    src.write_text("hi <|endoftext|> there", encoding="utf-8")
    out = tmp_path / "wide.npy"
    summary = encode_dataset(wide, expand_inputs([src]), out, eot=wide.special_ids["<|endoftext|>"], workers=2)
    ids = np.load(out)
    assert summary.dtype == "uint32" and ids.dtype == np.uint32
    assert ids.tolist() == [*wide.encode("hi <|endoftext|> there"), base + 256]
    assert wide.digest() != gpt2.digest()


def test_sidecar_vocab_size_is_the_largest_id_plus_one(tmp_path):
    """Special tokens past a gap in the ids (as cl100k's are): an embedding table sized from
    the sidecar holds every id written."""
    ranks = tmp_path / "gap.tiktoken"
    ranks.write_bytes(b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256)))
    gap = Tokenizer.from_tiktoken(ranks, "gpt2", {"<|endoftext|>": 300, "<|end|>": 310})
    src = tmp_path / "t.txt"
    src.write_text("hi <|end|> there <|endoftext|>", encoding="utf-8")
    encode_dataset(gap, expand_inputs([src]), tmp_path / "ids.bin")
    side = json.loads((tmp_path / "ids.bin.json").read_text())
    assert max(read_ids(tmp_path / "ids.bin")) == 310
    assert side["vocab_size"] == 311 and len(gap.vocab) == 258


def test_model_digest_is_the_model_not_its_files(gpt2, tmp_path):
    gpt2.save(tmp_path / "tokenizer.json")
    assert Tokenizer.load(tmp_path / "tokenizer.json").digest() == gpt2.digest()
    swapped = gpt2.merges[:]
    swapped[5], swapped[6] = swapped[6], swapped[5]
    assert Tokenizer(gpt2.vocab, swapped, gpt2.special_tokens).digest() != gpt2.digest()
    assert Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens, pattern="gpt4").digest() != gpt2.digest()
    grown = gpt2.vocab | {max(gpt2.vocab) + 1: b"an entry no merge makes"}
    assert Tokenizer(grown, gpt2.merges, gpt2.special_tokens).digest() != gpt2.digest()


def nothing_written(tmp_path: Path, keep: set[str]) -> None:
    assert {p.name for p in tmp_path.iterdir()} == keep


def test_missing_model_or_file_is_refused(gpt2_dir, tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("hello", encoding="utf-8")
    out = tmp_path / "ids.bin"
    refused(run_cli("encode", "--model", str(tmp_path / "nope"), "--file", str(text), "--out", str(out)), "nope")
    refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(text), str(tmp_path / "gone.txt"), "--out", str(out)), "gone.txt")
    refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(tmp_path / "*.jsonl"), "--out", str(out)), "no file matches")
    gone = tmp_path / "no"
    refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(text), "--out", str(gone / "ids.bin")), f"{gone} does not exist")
    refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(text), "--out", str(out), "--workers", "0"), "--workers")
    refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(text), str(text), "--headless"), "--out")
    refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(text), "--headless", "--eot"), "--eot goes with --out")
    nothing_written(tmp_path, {"a.txt"})


@pytest.mark.parametrize("workers", ["1", "2"])
def test_bad_jsonl_line_names_file_and_line(gpt2_dir, tmp_path, workers):
    good = "".join(json.dumps({"text": f"document {i} " * 50}) + "\n" for i in range(200))
    bad = tmp_path / "b.jsonl"
    bad.write_text(good + '{"text": "cut short\n' + good, encoding="utf-8")
    out = tmp_path / "ids.bin"
    line = refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(bad), "--out", str(out), "--workers", workers))
    assert f"{bad}: line 201: not valid JSON" in line
    nothing_written(tmp_path, {"b.jsonl"})


@pytest.mark.parametrize("workers", [1, 2])
def test_a_text_files_blocks_are_encoded_from_their_utf8(gpt2, tmp_path, monkeypatch, workers):
    """A plain-text file is encoded a block of bytes at a time, each block's UTF-8 read by the
    encoder (``Encoder.encode_utf8``, no str made); a block that is not UTF-8 is decoded as
    the file's errors say: its bad byte named where it lies in the file, or replaced. An
    empty file is a document of no text."""
    monkeypatch.setattr(dataset, "BATCH_CHARS", 64)  # many blocks
    raw = ("hello world, " * 40).encode() + "孙悟空 ".encode() + b"caf\xe9 " + ("more text <|endoftext|> here " * 40).encode()
    path, empty = tmp_path / "a.txt", tmp_path / "b.txt"
    path.write_bytes(raw)
    empty.write_bytes(b"")
    units: list[bool] = []
    unit = T._text_unit

    def spy(*args: object) -> tuple[bytes, bool]:
        out = unit(*args)  # type: ignore[arg-type]
        units.append(out[1])
        return out

    monkeypatch.setattr(T, "_text_unit", spy)
    bad = raw.index(b"\xe9")
    with pytest.raises(CorpusError, match=f"a.txt: .*not valid UTF-8 at byte offset {bad}"):
        dataset_ids(gpt2, expand_inputs([path]), workers=workers)
    units.clear()
    held = dataset_ids(gpt2, expand_inputs([path, empty]), eot=50256, errors="replace", workers=workers)
    assert np.frombuffer(held.ids, held.dtype).tolist() == expected_ids(gpt2, [raw.decode("utf-8", "replace"), ""], 50256)
    assert held.documents == 2 and units.count(True) == 2 and len(units) > 10


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("block", [64, 128])  # shorter than a long line, as LINE_BLOCK is than LONG_LINE
def test_a_long_jsonl_lines_text_is_encoded_in_pieces(gpt2, tmp_path, monkeypatch, workers, block):
    """A JSONL line longer than ``LONG_LINE`` whose text the encoder reads is cut into pieces
    where a pre-token always starts, which the threads encode together (and one thread a
    piece at a time), and the lines after it in its block go on as a block; the ids are those
    of each whole text, ``eot`` after it.
    A long line the encoder leaves to Python (a lone surrogate) goes whole, as before."""
    monkeypatch.setattr(T, "LONG_LINE", 200)
    monkeypatch.setattr(T, "PIECE_CHARS", 64)
    monkeypatch.setattr("engine.corpus.shards.LINE_BLOCK", block)
    long_text = 'Hello world, "quoted" 孙悟空 <|endoftext|> don\'t\n' * 30
    docs = ["short one", long_text, "between", "a lone \ud800 " * 30, "last"]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    pieces: list[bool] = []
    unit = T._jsonl_unit

    def spy(*args: object) -> tuple[bytes, int]:
        if isinstance(args[-1], T._LinePiece):
            pieces.append(args[-1].last)
        return unit(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(T, "_jsonl_unit", spy)
    held = dataset_ids(gpt2, expand_inputs([path]), eot=50256, workers=workers, errors="replace")
    texts = [*docs[:3], docs[3].replace("\ud800", "\ufffd"), docs[4]]  # as the file's errors say
    assert np.frombuffer(held.ids, held.dtype).tolist() == expected_ids(gpt2, texts, 50256)
    assert held.documents == len(docs)
    assert len(pieces) > 5 and pieces.count(True) == 1


def test_skip_bad_records_and_replace_invalid_utf8(gpt2_dir, gpt2, tmp_path):
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(b'{"text": "one"}\n{"text": 7}\nnot json\n{"text": "two"}\n')
    text = tmp_path / "c.txt"
    text.write_bytes(b"caf\xe9 ok")
    out = tmp_path / "ids.bin"
    done = run_cli(
        "encode", "--model", str(gpt2_dir), "--file", str(bad), str(text), "--out", str(out), "--skip-bad-records", "--errors", "replace"
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "bpe-tui: skipped 2 bad records (--skip-bad-records)"
    assert read_ids(out) == expected_ids(gpt2, ["one", "two", "caf\ufffd ok"], None)
    assert json.loads((tmp_path / "ids.bin.json").read_text())["bad_records_skipped"] == 2
    line = refused(run_cli("encode", "--model", str(gpt2_dir), "--file", str(text), "--out", str(out)), "not valid UTF-8 at byte offset 3")
    assert str(text) in line


def test_eot_needs_the_models_end_of_text(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    Tokenizer({b: bytes([b]) for b in range(256)}, []).save(model / "tokenizer.json")
    text = tmp_path / "a.txt"
    text.write_text("hello", encoding="utf-8")
    refused(run_cli("encode", "--model", str(model), "--file", str(text), "--out", str(tmp_path / "ids.bin"), "--eot"), "<|endoftext|>")
    nothing_written(tmp_path, {"a.txt", "model"})


def test_npy_without_numpy_names_the_extra(gpt2_dir, tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("hello", encoding="utf-8")
    script = "import sys; sys.modules['numpy'] = None; from bpe_tui.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", script, "encode", "--model", str(gpt2_dir), "--file", str(text), "--out", str(tmp_path / "ids.npy")],
        cwd=ROOT,
        env=CLI_ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    refused(done, "pip install 'bpe-tui[numpy]'")
    nothing_written(tmp_path, {"a.txt"})


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_leaves_nothing_under_the_final_name(gpt2_dir, tmp_path, signum):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) or kill while encoding:
    exit 130, one line, neither the ids file nor its temporary file left."""
    texts = tmp_path / "texts"  # 660 MB in 10 links to one file: seconds of encoding after the first batch lands
    texts.mkdir()
    (texts / "0.txt").write_bytes(fixture_file("en-mix-192k.txt").read_bytes() * 340)
    for i in range(1, 10):
        os.link(texts / "0.txt", texts / f"{i}.txt")
    out = tmp_path / "ids.bin"
    # A shell's background job ignores SIGINT, and so would the child: a handled signal is reset to default by exec.
    ours = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bpe_tui.cli",
                "encode",
                "--model",
                str(gpt2_dir),
                "--file",
                str(texts),
                "--out",
                str(out),
                "--workers",
                "2",
            ],
            cwd=ROOT,
            env=CLI_ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    finally:
        signal.signal(signal.SIGINT, ours)
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") and p.stat().st_size > 0 for p in tmp_path.iterdir()):  # encoding has begun
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines() == [f"bpe-tui: interrupted: nothing written to {out}"] and stdout == ""
    nothing_written(tmp_path, {"texts"})


def test_parquet_rows_are_documents(gpt2, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": list(range(len(DOCS))), "body": DOCS}), path, row_group_size=2)
    out = tmp_path / "ids.bin"
    summary = encode_dataset(gpt2, expand_inputs([path]), out, text_field="body", eot=50256, workers=2)
    assert read_ids(out) == expected_ids(gpt2, DOCS, 50256)
    assert summary.documents == len(DOCS)


def test_a_killed_run_leaves_no_temporary_file_behind(gpt2, corpus, tmp_path):
    """A run killed outright leaves its temporary file; the next run on the same path removes
    it, but not one of a run still going."""
    files, _ = corpus
    out = tmp_path / "ids.bin"
    dead = tmp_path / ".ids.bin.4194305.tmp"  # above Linux's largest pid: no such process
    running = tmp_path / f".ids.bin.{os.getppid()}.tmp"
    for tmp in (dead, running):
        tmp.write_bytes(b"partial")
    encode_dataset(gpt2, expand_inputs([str(f) for f in files]), out, text_field="body")
    assert not dead.exists() and running.exists()
