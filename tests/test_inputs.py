"""Inputs users have: several files, directories and globs, JSONL and Parquet, gzip and zstd;
saved counts; and their bad input, refused in one line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import CorpusError, SettingsError, Tokenizer, Trainer, train_bpe, train_from_iterator
from engine.corpus.counting import count_inputs
from engine.corpus.counts_file import load_counts
from engine.corpus.shards import CountSettings
from tests.conftest import CLI_ENV, fixture_file, refused, run_cli, zstd_compress

SPECIAL = "<|endoftext|>"
DOCS = [
    "The cat sat on the mat. The cat ate the rat.",
    "low lower lowest newer newest widest\n\nlow low",
    "Hello world! 你好，世界。 😀 don't stop",
    "the end",
] * 5


def write(path: Path, docs: list[str]) -> Path:
    """``docs`` in the format and compression ``path``'s name asks for."""
    name = path.name
    if ".parquet" in name:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.table({"id": list(range(len(docs))), "text": docs}), path, row_group_size=3)
        return path
    data = (
        "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs)
        if ".jsonl" in name or ".ndjson" in name
        else SPECIAL.join(docs)  # plain text: one document, cut where documents are by the special token
    ).encode("utf-8")
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".zst"):
        data = zstd_compress(data)
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def plain_merges(tmp_path_factory) -> list[tuple[bytes, bytes]]:
    return train_bpe(write(tmp_path_factory.mktemp("plain") / "docs.txt", DOCS), 320, [SPECIAL])[1]


@pytest.mark.parametrize(
    "name", ["docs.jsonl", "docs.jsonl.gz", "docs.jsonl.zst", "docs.txt.gz", "docs.txt.zst", "docs.parquet", "docs.ndjson"]
)
def test_every_format_trains_the_merges_of_the_same_plain_text(tmp_path, plain_merges, name):
    assert train_bpe(write(tmp_path / name, DOCS), 320, [SPECIAL])[1] == plain_merges


def test_an_iterable_of_strings_trains_the_same_merges(plain_merges):
    assert train_from_iterator(iter(DOCS), 320, [SPECIAL])[1] == plain_merges
    with pytest.raises(CorpusError, match="item 1 of the texts is bytes, not str"):
        train_from_iterator(["ok", b"not text"], 320, [SPECIAL])


def test_documents_never_merge_into_each_other(tmp_path):
    """Two JSONL lines "hello" and "world" are two pre-tokens, never "helloworld"."""
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "hello"}\n{"text": "world"}\n')
    counts, _ = count_inputs([path], CountSettings())
    assert dict(counts) == {b"hello": 1, b"world": 1}


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(4)), spread=st.sampled_from(["files", "dir", "glob"]))
def test_the_merges_do_not_depend_on_how_the_files_are_listed(tmp_path, plain_merges, order, spread):
    """The documents spread over files named in any order, or by a directory or a glob."""
    root = tmp_path / "corpus"
    root.mkdir(exist_ok=True)
    names = ["a.jsonl", "b.txt", "sub/c.jsonl.gz", "d.txt.gz"]
    for i, name in enumerate(names):
        (root / name).parent.mkdir(exist_ok=True)
        write(root / name, DOCS[i::4])
    listed = {"files": [root / names[i] for i in order], "dir": [root], "glob": [f"{root}/*", f"{root}/**/*.gz"]}[spread]
    assert train_bpe(listed, 320, [SPECIAL])[1] == plain_merges


def test_workers_and_shard_size_do_not_change_the_merges(monkeypatch, tmp_path, plain_merges):
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)
    paths = [write(tmp_path / f"part{i}.jsonl", DOCS[i::2]) for i in range(2)]
    counts, summary = count_inputs(paths, CountSettings(special_tokens=(SPECIAL,)), workers=2, shard_bytes=64)
    trainer = Trainer(counts, 320, [SPECIAL])
    trainer.run()
    assert trainer.merges == plain_merges
    assert summary.digest == count_inputs(paths, CountSettings(special_tokens=(SPECIAL,)), workers=1, shard_bytes=64)[1].digest


# -- saved counts -------------------------------------------------------------------------------


def test_saved_counts_train_the_same_merges_at_every_vocab_size(tmp_path, reference_merges):
    corpus = fixture_file("corpus.en")
    counts_path = tmp_path / "corpus.counts"
    first = Trainer.from_files(corpus, 500, [SPECIAL], save_counts=counts_path)
    first.run()
    assert first.merges == reference_merges
    for vocab in (300, 500):
        again = Trainer.from_counts_file(counts_path, vocab, [SPECIAL])
        again.run()
        assert again.merges == reference_merges[: vocab - 257]
    saved = load_counts(counts_path)
    assert saved.summary == first.summary and saved.counts == {w.text: w.count for w in first.words(len(saved.counts))}


def test_save_counts_then_counts_through_the_command(tmp_path):
    corpus = write(tmp_path / "docs.jsonl.gz", DOCS)
    done = run_cli("train", str(corpus), "--headless", "--vocab-size", "320", "--save-counts", "c.counts", "--out", "a", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "saved to c.counts" in done.stdout
    again = run_cli("train", "--counts", "c.counts", "--headless", "--vocab-size", "320", "--out", "b", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "c.counts (saved counts)" in again.stdout and "loading the counts" in again.stdout
    for name in ("tokenizer.json", "vocab.json", "merges.txt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    # A run resumed from saved counts finishes the same as one counted from the corpus.
    more = run_cli("train", "--counts", "c.counts", "--headless", "--vocab-size", "330", "--resume", "b", cwd=tmp_path)
    assert more.returncode == 0, more.stderr
    assert Tokenizer.load(tmp_path / "b").merges == train_bpe(corpus, 330, [SPECIAL])[1]


@pytest.fixture()
def saved_counts(tmp_path) -> Path:
    corpus = write(tmp_path / "docs.txt", DOCS)
    Trainer.from_files(corpus, 300, [SPECIAL], save_counts=tmp_path / "c.counts")
    return tmp_path / "c.counts"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--pattern", "gpt4"], "c.counts: counted with --pattern gpt2, not gpt4"),
        (["--special-token", "<s>"], "c.counts: counted with special tokens ['<|endoftext|>'], not ['<s>']"),
        (["docs.txt"], "--counts trains from saved counts: give it no corpus files"),
        (["--save-counts", "d.counts"], "--save-counts saves the counts of a corpus"),
    ],
)
def test_counts_made_otherwise_are_refused(saved_counts, args, expected):
    refused(run_cli("train", "--counts", "c.counts", *args, "--headless", cwd=saved_counts.parent), expected)


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda b: b[: len(b) - 7], "c.counts: truncated counts file"),
        (lambda b: b + b"more", "c.counts: corrupt counts file: more than its"),
        (lambda b: b[:-3] + b"xyz", "c.counts: corrupt counts file: its contents do not match their checksum"),
        (lambda b: b[:40], "c.counts: not a counts file"),
        (lambda b: b"the cat sat\n", "c.counts: not a counts file"),
        (lambda b: b.replace(b'"version": 1', b'"version": 9', 1), "c.counts: counts file version 9"),
    ],
)
def test_a_damaged_counts_file_is_one_line(saved_counts, damage, expected):
    saved_counts.write_bytes(damage(saved_counts.read_bytes()))
    refused(run_cli("train", "--counts", "c.counts", "--headless", cwd=saved_counts.parent), expected)


# -- bad input ----------------------------------------------------------------------------------

BAD = {
    "notjson.jsonl": '{"text": "fine"}\n{"text": "fine"}\n{not json}\n',
    "nofield.jsonl": '{"text": "fine"}\n{"body": "elsewhere"}\n',
    "number.jsonl": '{"text": "fine"}\n\n{"text": 12}\n',
    "array.jsonl": '["text"]\n',
    "data.bz2": "compressed elsewhere",
    "table.csv": "a,b\n1,2\n",
    "broken.txt.gz": "not gzip at all",
}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["notjson.jsonl"],
            "notjson.jsonl: line 3: not valid JSON (Expecting property name enclosed in double quotes); "
            "--skip-bad-records skips such records",
        ),
        (["nofield.jsonl"], 'nofield.jsonl: line 2: no "text" field'),
        (["number.jsonl"], 'number.jsonl: line 3: "text" is a number, not a string'),
        (["array.jsonl"], 'array.jsonl: line 1: no "text" field (the line holds an array)'),
        (["nofield.jsonl", "--text-field", "body"], 'nofield.jsonl: line 1: no "body" field'),
        (
            ["data.bz2"],
            "data.bz2: unknown extension .bz2: bpe-tui reads plain text, .jsonl or .parquet, optionally compressed as .gz or .zst",
        ),
        (["table.csv"], "table.csv: unknown extension .csv"),
        (["*.parquet"], "*.parquet: no file matches this pattern"),
        (["broken.txt.gz"], "broken.txt.gz: cannot read it (Not a gzipped file"),
        (["empty"], "empty: the directory holds no files"),
    ],
)
def test_bad_input_is_one_line_naming_the_file(tmp_path, args, expected):
    for name, text in BAD.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "empty").mkdir()
    refused(run_cli("train", *args, "--headless", cwd=tmp_path), expected)
    assert not (tmp_path / "out").exists()


def test_a_parquet_file_without_the_column_is_one_line(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"body": ["a b c"], "n": [1]}), tmp_path / "t.parquet")
    refused(
        run_cli("train", "t.parquet", "--headless", cwd=tmp_path),
        't.parquet: no column "text" (it has body, n): name the text column with --text-field',
    )
    refused(
        run_cli("train", "t.parquet", "--text-field", "n", "--headless", cwd=tmp_path), 't.parquet: column "n" holds int64, not strings'
    )
    done = run_cli("train", "t.parquet", "--text-field", "body", "--headless", "--vocab-size", "260", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_skip_bad_records_counts_and_reports_them(tmp_path):
    for name, text in BAD.items():
        if name.endswith(".jsonl"):
            (tmp_path / name).write_text(text)
    done = run_cli("train", "*.jsonl", "--skip-bad-records", "--headless", "--vocab-size", "260", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "bad records  4 skipped" in done.stdout
    assert done.stderr.strip() == "bpe-tui: skipped 4 bad records (--skip-bad-records)"
    nothing = run_cli("train", "array.jsonl", "--skip-bad-records", "--headless", cwd=tmp_path)
    refused(nothing, "array.jsonl: every record is bad (1 skipped): no text to train on")


@pytest.mark.parametrize(("module", "name", "extra"), [("backports.zstd", "docs.txt.zst", "zstd"), ("pyarrow", "docs.parquet", "parquet")])
def test_a_missing_optional_package_names_the_extra_to_install(tmp_path, module, name, extra):
    if module == "backports.zstd" and sys.version_info >= (3, 14):
        pytest.skip("Python reads zstd itself from 3.14 on")
    write(tmp_path / name, DOCS)
    script = f"import sys; sys.modules[{module!r}] = None; from bpe_tui.cli import main; sys.exit(main(['train', {name!r}, '--headless']))"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=CLI_ENV, capture_output=True, text=True, timeout=120)
    refused(done, f"{name}: reading", f"needs {module}: pip install 'bpe-tui[{extra}]'")


def test_no_inputs_is_a_settings_error():
    with pytest.raises(SettingsError, match="no input files"):
        train_bpe([], 300)


def test_a_url_is_read_through_fsspec(tmp_path, plain_merges):
    pytest.importorskip("fsspec")
    path = write(tmp_path / "docs.jsonl", DOCS)
    assert train_bpe([f"file://{path}"], 320, [SPECIAL])[1] == plain_merges
    assert train_bpe([f"file://{tmp_path}/*.jsonl"], 320, [SPECIAL])[1] == plain_merges


# -- the training screen ------------------------------------------------------------------------


async def test_the_screen_trains_on_jsonl_shards_and_tells_of_skipped_records(tmp_path, plain_merges):
    from bpe_tui.app import BpeApp
    from bpe_tui.encode.screen import EncodeScreen
    from bpe_tui.train.screen import TrainScreen
    from engine.train.settings import TrainOptions
    from tests.train_app import wait_until

    for i in range(2):
        write(tmp_path / f"part{i}.jsonl.gz", DOCS[i::2])
    (tmp_path / "bad.jsonl").write_text('{"text": 5}\n')
    options = TrainOptions(320, (SPECIAL,), workers=1, skip_bad_records=True)
    screen = TrainScreen([f"{tmp_path}/*.jsonl*"], options, label="docs")
    app = BpeApp(screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.snapshot is not None)
        await wait_until(pilot, lambda: any("skipped 1 bad record" in n.message for n in app._notifications))
        await pilot.press("f")
        await wait_until(pilot, lambda: screen.snapshot is not None and screen.snapshot.finished)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EncodeScreen))
        assert app.screen.walk.text.startswith(DOCS[0][:20])  # the first document of the first file
