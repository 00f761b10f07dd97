"""Random and damaged input: the file readers and loaders raise only their documented errors.

Corpus reading raises ``CorpusError``, model loading ``ModelFileError``, and the command
exits 0 or 2 (one line, and then no output file); anything else (a traceback) fails these
tests. Valid inputs of every format read are mutated (bytes flipped, inserted, deleted,
the file cut): text, JSONL, Parquet, gzip, zstd, tokenizer files, saved counts, resume
directories.

A few hundred cases by default; ``BPE_TUI_FUZZ=nightly`` runs ``NIGHTLY`` times as many.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bpe_tui.cli import main
from engine import CorpusError, ModelFileError, PreTokenizer, Tokenizer, Trainer
from engine.corpus.counting import count_file, count_inputs
from engine.corpus.counts_file import load_counts
from engine.corpus.shards import CountSettings
from engine.corpus.sources import check_utf8
from tests.conftest import zstd_module

SPECIAL = "<|endoftext|>"
NIGHTLY = 25
"""How many times the default examples ``BPE_TUI_FUZZ=nightly`` runs."""
SCALE = NIGHTLY if os.environ.get("BPE_TUI_FUZZ") == "nightly" else 1


def fuzz(examples: int) -> Callable[..., object]:
    """Hypothesis settings of ``examples`` cases (times ``SCALE``)."""
    return settings(max_examples=examples * SCALE, suppress_health_check=[HealthCheck.function_scoped_fixture])


FUZZ = fuzz(60)

corpus_bytes = st.lists(
    st.one_of(
        st.binary(max_size=4),
        st.text(max_size=6).map(str.encode),
        st.sampled_from([SPECIAL.encode(), b" ", b"\n", "é".encode(), "😀".encode()[:2], b"\xff"]),
    ),
    max_size=40,
).map(b"".join)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 1 << 70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    trainer = Trainer.from_text("the cat sat on the mat; the hat! 12 34 " * 30 + "日本語", 300, [SPECIAL])
    trainer.run()
    directory = tmp_path_factory.mktemp("model")
    Tokenizer.from_trainer(trainer).save_dir(directory)
    return directory


def load_or_model_error(path: Path) -> Tokenizer | None:
    """Load ``path``; None when it is refused with ``ModelFileError`` naming it."""
    try:
        tokenizer = Tokenizer.load(path)
    except ModelFileError as e:
        assert str(e).startswith(str(path.parent)), e
        return None
    text = "the cat, 日本語 " + SPECIAL  # what loads must also work, whatever its regex
    assert tokenizer.decode(tokenizer.encode(text)) == text
    return tokenizer


# -- corpus reading -------------------------------------------------------------------------


@FUZZ
@given(data=corpus_bytes, block=st.integers(1, 16))
def test_corpus_bytes_count_or_say_where_utf8_breaks(tmp_path, data, block):
    """Strict reading fails exactly where a whole-file decode fails, and so does ``check``'s
    look before a student's code reads the file; replace never fails."""
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    pretok = PreTokenizer("gpt2", [SPECIAL])
    try:
        expected = pretok.count(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        with pytest.raises(CorpusError, match=f"not valid UTF-8 at byte offset {e.start} "):
            count_file(path, pretok, workers=1, block_size=block)
        with pytest.raises(CorpusError, match=f"not valid UTF-8 at byte offset {e.start}$"):
            check_utf8(str(path), block)
    else:
        assert count_file(path, pretok, workers=1, block_size=block) == expected
        check_utf8(str(path), block)
    replaced = pretok.count(data.decode("utf-8", errors="replace"))
    assert count_file(path, pretok, workers=1, block_size=block, errors="replace") == replaced


@fuzz(25)
@given(data=corpus_bytes, errors=st.sampled_from(["strict", "replace"]))
def test_train_command_on_random_bytes(tmp_path, capsys, data, errors):
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    code = main(["train", str(path), "--headless", "--vocab-size", "270", "--workers", "1", "--errors", errors, "--out", str(out)])
    assert code in (0, 2)
    err = capsys.readouterr().err
    if code == 2:
        assert err.strip().splitlines()[-1].startswith(f"bpe-tui: {path}: ")
        assert not out.exists()
    else:
        assert load_or_model_error(out / "tokenizer.json") is not None


@fuzz(25)
@given(data=corpus_bytes)
def test_encode_command_on_random_bytes(tmp_path, capsys, model_dir, data):
    path = tmp_path / "input.txt"
    path.write_bytes(data)
    code = main(["encode", "--model", str(model_dir), "--file", str(path), "--json"])
    out, err = capsys.readouterr()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        assert code == 2 and f"not valid UTF-8 at byte offset {e.start}\n" in err and out == ""
    else:
        assert code == 0 and Tokenizer.load(model_dir).decode([t["id"] for t in json.loads(out)]) == text


# -- model files ------------------------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes_as_model_files(tmp_path, model_dir, data):
    (tmp_path / "tokenizer.json").write_bytes(data)
    assert load_or_model_error(tmp_path / "tokenizer.json") is None
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir(exist_ok=True)
    (gpt2 / "vocab.json").write_bytes((model_dir / "vocab.json").read_bytes())
    (gpt2 / "merges.txt").write_bytes(data)
    load_or_model_error(gpt2 / "merges.txt")  # a directory with vocab.json + merges.txt
    load_or_model_error(gpt2)


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.json", "merges.txt"])
@FUZZ
@given(cut=st.floats(0, 1))
def test_truncated_model_files(tmp_path, model_dir, name, cut):
    """Any prefix of a saved file: refused, or (cut in the trailing newline) loaded."""
    for file in model_dir.iterdir():
        data = file.read_bytes()
        (tmp_path / file.name).write_bytes(data[: int(len(data) * cut)] if file.name == name else data)
    if load_or_model_error(tmp_path / "tokenizer.json" if name == "tokenizer.json" else tmp_path / "merges.txt") is None:
        return
    (tmp_path / "tokenizer.json").unlink()
    load_or_model_error(tmp_path)


PLACES = [
    (),
    ("model",),
    ("model", "type"),
    ("model", "vocab"),
    ("model", "merges"),
    ("model", "merges", 0),
    ("model", "vocab", "Ġt"),
    ("model", "ignore_merges"),
    ("added_tokens",),
    ("added_tokens", 0),
    ("added_tokens", 0, "content"),
    ("added_tokens", 0, "id"),
    ("pre_tokenizer",),
    ("pre_tokenizer", "pretokenizers"),
    ("pre_tokenizer", "pretokenizers", 0, "pattern", "Regex"),
    ("pre_tokenizer", "pretokenizers", 1),
    ("normalizer",),
    ("model", "dropout"),
]


@FUZZ
@given(place=st.sampled_from(PLACES), value=json_values)
@example(place=("normalizer",), value=[])  # a step that is a list: once a TypeError
def test_damaged_tokenizer_json(tmp_path, model_dir, place, value):
    """One part of a good ``tokenizer.json`` replaced by any JSON value."""
    doc = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    if place:
        *parents, last = place
        node = doc
        for key in parents:
            node = node[key]
        node[last] = value
    else:
        doc = value
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    load_or_model_error(tmp_path / "tokenizer.json")


# -- round trip -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(model_dir) -> Tokenizer:
    return Tokenizer.load(model_dir)  # the saved file, as users load it


@fuzz(150)
@given(parts=st.lists(st.text() | st.just(SPECIAL), max_size=8))
def test_decode_encode_is_identity_for_any_unicode(loaded, parts):
    text = "".join(parts)
    assert loaded.decode(loaded.encode(text)) == text


# -- mutated inputs of every format ------------------------------------------------------------

EDITS = ("flip", "cut", "insert", "delete", "overwrite")
mutations = st.lists(
    st.tuples(st.sampled_from(EDITS), st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=8)), min_size=1, max_size=3
)


def mutate(data: bytes, edits: list[tuple[str, float, bytes]]) -> bytes:
    """``data`` with each edit made in turn, at its place (a fraction of the length)."""
    for edit, where, some in edits:
        i = int(where * len(data))
        if edit == "flip" and data:
            data = data[:i] + bytes([data[i] ^ (some[0] | 1)]) + data[i + 1 :]
        elif edit == "cut":
            data = data[:i]
        elif edit == "insert":
            data = data[:i] + some + data[i:]
        elif edit == "delete":
            data = data[:i] + data[i + len(some) :]
        elif edit == "overwrite":
            data = data[:i] + some + data[i + len(some) :]
    return data


DOCUMENTS = ["the cat sat on the mat", "naïve café, 日本語 😀", f"two{SPECIAL}documents", "", "the end\n"]


class Files(dict[str, bytes]):
    """Files by name, shown by their names alone (in a failing case's report)."""

    def __repr__(self) -> str:
        return f"Files({', '.join(self)})"


@pytest.fixture(scope="module")
def valid_inputs(tmp_path_factory) -> dict[str, bytes]:
    """A valid file of every format the corpus readers take, by name."""
    text = SPECIAL.join(DOCUMENTS).encode()
    jsonl = "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in DOCUMENTS).encode()
    files = Files({"c.txt": text, "c.jsonl": jsonl, "c.txt.gz": gzip.compress(text), "c.jsonl.gz": gzip.compress(jsonl)})
    zstd = zstd_module()
    if zstd is not None:
        files |= {"c.txt.zst": zstd.compress(text), "c.jsonl.zst": zstd.compress(jsonl)}
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return files
    path = tmp_path_factory.mktemp("parquet") / "c.parquet"
    pq.write_table(pa.table({"text": DOCUMENTS, "n": list(range(len(DOCUMENTS)))}), path, row_group_size=2)
    files["c.parquet"] = path.read_bytes()
    return files


NAMES = ["c.txt", "c.jsonl", "c.txt.gz", "c.jsonl.gz", "c.txt.zst", "c.jsonl.zst", "c.parquet"]


def corpus_file(tmp_path: Path, valid_inputs: dict[str, bytes], name: str, edits: list[tuple[str, float, bytes]]) -> Path:
    if name not in valid_inputs:
        pytest.skip(f"{name}: its optional package is not installed")
    path = tmp_path / name
    path.write_bytes(mutate(valid_inputs[name], edits))
    return path


@fuzz(120)
@given(name=st.sampled_from(NAMES), edits=mutations, errors=st.sampled_from(["strict", "replace"]), skip=st.booleans())
def test_mutated_corpus_files_count_or_say_what_is_wrong(tmp_path, valid_inputs, name, edits, errors, skip):
    path = corpus_file(tmp_path, valid_inputs, name, edits)
    settings = CountSettings(special_tokens=(SPECIAL,), errors=errors, skip_bad_records=skip)
    try:
        counts, summary = count_inputs([path], settings, workers=1)
    except CorpusError as e:
        assert str(e).startswith(f"{path}: "), e
    else:
        assert all(isinstance(word, bytes) and n > 0 for word, n in counts.items())
        assert summary.inputs == ((str(path), path.stat().st_size),)


def refused_or_written(capsys: pytest.CaptureFixture[str], code: int, outputs: list[Path]) -> bool:
    """Exit 2 with one line and none of ``outputs``, or 0 with all of them; whether written."""
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (0, 2)
    if code == 2:
        assert len(err) == 1 and err[0].startswith("bpe-tui: "), err
        assert not any(p.exists() for p in outputs)
        return False
    assert all(p.exists() for p in outputs)
    return True


@fuzz(40)
@given(name=st.sampled_from(NAMES), edits=mutations)
def test_mutated_corpus_through_train_and_encode(tmp_path, capsys, valid_inputs, model_dir, name, edits):
    """A corrupt input never produces output files: not the tokenizer, the counts or the ids."""
    path = corpus_file(tmp_path, valid_inputs, name, edits)
    out, counts, ids = tmp_path / "out", tmp_path / "c.counts", tmp_path / "ids.bin"
    for p in (counts, ids, ids.with_name("ids.bin.json")):
        p.unlink(missing_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    code = main(
        ["train", str(path), "--headless", "--workers", "1", "--vocab-size", "270", "--out", str(out), "--save-counts", str(counts)]
    )
    if refused_or_written(capsys, code, [out / "tokenizer.json", counts]):
        load_or_model_error(out / "tokenizer.json")
    code = main(["encode", "--model", str(model_dir), "--file", str(path), "--out", str(ids)])
    refused_or_written(capsys, code, [ids, ids.with_name("ids.bin.json")])


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A directory with a corpus, its saved counts and a run to resume."""
    directory = tmp_path_factory.mktemp("saved")
    (directory / "corpus.txt").write_text(SPECIAL.join(DOCUMENTS * 5), encoding="utf-8")
    trainer = Trainer.from_files(directory / "corpus.txt", 270, [SPECIAL], workers=1, save_counts=directory / "c.counts")
    trainer.run()
    Tokenizer.from_trainer(trainer).save_dir(directory / "run")
    return directory


@fuzz(60)
@given(edits=mutations, reseal=st.booleans())
def test_mutated_counts_files_load_and_train_or_say_what_is_wrong(tmp_path, saved, edits, reseal):
    """``reseal``: the payload's checksum made to match again, as a file crafted to pass it."""
    data = (saved / "c.counts").read_bytes()
    header, _, payload = data.partition(b"\n")
    if reseal:
        payload = mutate(payload, edits)
        checksum = json.loads(header)["payload_blake2b"]
        header = header.replace(checksum.encode(), hashlib.blake2b(payload, digest_size=16).hexdigest().encode())
        data = header + b"\n" + payload
    else:
        data = mutate(data, edits)
    path = tmp_path / "c.counts"
    path.write_bytes(data)
    try:
        load_counts(path)
        trainer = Trainer.from_counts_file(path, 280, [SPECIAL])
    except CorpusError as e:
        assert str(e).startswith(f"{path}: "), e
        return
    trainer.run()
    assert len(trainer.merges) <= 280 - 257


@fuzz(40)
@given(name=st.sampled_from(["tokenizer.json", "vocab.json", "merges.txt"]), edits=mutations)
def test_mutated_resume_directories_resume_or_change_nothing(tmp_path, capsys, saved, name, edits):
    run = tmp_path / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(saved / "run", run)
    (run / name).write_bytes(mutate((run / name).read_bytes(), edits))
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    args = ["train", str(saved / "corpus.txt"), "--headless", "--workers", "1", "--vocab-size", "275", "--resume", str(run)]
    code = main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (0, 2)
    if code == 2:
        assert len(err) == 1 and err[0].startswith("bpe-tui: "), err
        assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # nothing written over the run
    else:
        assert load_or_model_error(run / "tokenizer.json") is not None


@fuzz(60)
@given(name=st.sampled_from(["tokenizer.json", "vocab.json", "merges.txt"]), edits=mutations)
def test_mutated_model_files(tmp_path, model_dir, name, edits):
    for file in model_dir.iterdir():
        data = file.read_bytes()
        (tmp_path / file.name).write_bytes(mutate(data, edits) if file.name == name else data)
    if name == "tokenizer.json":
        load_or_model_error(tmp_path / "tokenizer.json")
        return
    (tmp_path / "tokenizer.json").unlink()  # vocab.json + merges.txt alone
    load_or_model_error(tmp_path / name)


def test_mutate_makes_each_edit():
    """The edits the fuzz tests rest on do what they say."""
    assert mutate(b"abcdef", [("flip", 0.0, b"\x01")]) == b"`bcdef"
    assert mutate(b"abcdef", [("cut", 0.5, b"x")]) == b"abc"
    assert mutate(b"abcdef", [("insert", 0.5, b"XY")]) == b"abcXYdef"
    assert mutate(b"abcdef", [("delete", 0.5, b"XY")]) == b"abcf"
    assert mutate(b"abcdef", [("overwrite", 0.5, b"XY")]) == b"abcXYf"
