"""``bpe-tui compare --headless [--json]`` and its one-line refusals, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine import PreTokenizer
from tests.compare_models import SAMPLE, gpt2_dir
from tests.conftest import CLI_ENV, ROOT, refused, run_cli

TEXT = "Hello, 🌍! 你好! The keeper's cat watched 1234 waves."


def test_json_holds_every_row(models: Path, tmp_path: Path) -> None:
    gpt2 = gpt2_dir(tmp_path)
    done = run_cli(
        "compare", "--headless", "--json", "--text", TEXT,
        "--model", str(gpt2), "--model", str(models / "wordpiece.json"), "--model", str(models / "unigram.json"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    size = len(TEXT.encode("utf-8"))
    assert (out["text"], out["bytes"], out["characters"], out["reference"]) == (TEXT, size, len(TEXT), "gpt2")
    rows = {row["name"]: row for row in out["rows"]}
    ladder = ["character", "byte", "word (sample.txt)", "BPE (sample.txt)", "WordPiece (sample.txt)", "Unigram (sample.txt)"]
    assert list(rows) == [*ladder, "gpt2", "wordpiece.json", "unigram.json"]
    kinds = ["character", "byte", "word", "BPE", "WordPiece", "Unigram", "BPE", "WordPiece", "Unigram"]
    assert [row["kind"] for row in out["rows"]] == kinds
    for row in out["rows"]:
        assert row["tokens"] == len(row["spans"])
        assert row["bytes_per_token"] == round(size / row["tokens"], 4)
        assert row["unknown"] == sum(s["unknown"] for s in row["spans"])
        assert row["differing"] == sum(s["differs"] for s in row["spans"])
    assert [s["id"] for s in rows["character"]["spans"]] == list(map(ord, TEXT))
    assert [s["id"] for s in rows["byte"]["spans"]] == list(TEXT.encode("utf-8"))
    assert rows["gpt2"]["differing"] == 0
    reference = {(s["start"], s["end"]) for s in rows["gpt2"]["spans"]}
    for row in out["rows"]:
        assert [s["differs"] for s in row["spans"]] == [(s["start"], s["end"]) not in reference for s in row["spans"]]
    # the word vocabulary is the sample's words: unknown exactly where a word is not one of them
    known = {w.decode() for w in PreTokenizer("gpt2", ["<|endoftext|>"]).count(SAMPLE.read_text(encoding="utf-8"))}
    words = rows["word (sample.txt)"]["spans"]
    assert [s["unknown"] for s in words] == [s["token"] not in known for s in words]
    assert rows["word (sample.txt)"]["unknown"] > 0 and rows["BPE (sample.txt)"]["unknown"] == 0
    assert rows["wordpiece.json"]["vocab_size"] == 300
    assert any(s["token"].startswith("##") for s in rows["wordpiece.json"]["spans"])


def test_table_and_spans(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat " * 20, encoding="utf-8")
    done = run_cli("compare", "--headless", "--text", "the cat sat on a hat", "--corpus", str(corpus), "--vocab-size", "270")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("differ: "))) :]
    assert "BPE (corpus.txt)" in table[0]  # the reference, named in the title
    cells = {row[0]: row[1:] for row in ([c.strip() for c in line.split("│")[1:-1]] for line in table if line.startswith("│"))}
    # words: the, ␣cat, ␣sat, ␣on, ␣the, ␣mat and the last ␣; ␣a and ␣hat are not among them
    assert cells["word (corpus.txt)"] == ["9", "6", "3.33", "2", "2"]  # ␣a and ␣hat: two BPE tokens each
    assert cells["character"] == ["1,114,112", "20", "1.00", "0", "16"]
    assert cells["BPE (corpus.txt)"][-1] == "reference"
    assert "␣cat" in done.stdout  # the spans above the table


def test_text_from_stdin_and_file(tmp_path: Path) -> None:
    piped = run_cli("compare", "--json", stdin="a b")
    path = tmp_path / "t.txt"
    path.write_text("a b", encoding="utf-8")
    read = run_cli("compare", "--json", "--file", str(path))
    assert json.loads(piped.stdout) == json.loads(read.stdout)
    assert json.loads(piped.stdout)["rows"][0]["tokens"] == 3


def test_bad_input_is_one_line(models: Path, tmp_path: Path) -> None:
    refused(run_cli("compare", "--headless", "--text", "x", "--model", str(tmp_path / "nope")), "nope: no such file or directory")
    truncated = tmp_path / "truncated.json"
    truncated.write_text((models / "wordpiece.json").read_text()[:300])
    refused(run_cli("compare", "--headless", "--text", "x", "--model", str(truncated)), "truncated JSON")
    wrong = json.loads((models / "unigram.json").read_text())
    wrong["model"]["type"] = "Telepathy"
    (tmp_path / "wrong.json").write_text(json.dumps(wrong))
    refused(
        run_cli("compare", "--headless", "--text", "x", "--model", str(tmp_path / "wrong.json")), "cannot open this Telepathy tokenizer"
    )
    refused(run_cli("compare", "--headless", "--text", "x", "--corpus", str(tmp_path / "none.txt")), "none.txt: no such file or directory")
    refused(run_cli("compare", "--headless", "--text", "x", "--vocab-size", "100"), "vocab size 100 is below 257")
    refused(run_cli("compare", "--text", "x", "--file", "y"), "not allowed with argument")


def test_a_corpus_not_utf8_is_refused_or_read_with_errors_replace(tmp_path: Path) -> None:
    """The refusal's hint names ``--errors replace``, which compare takes as train does."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"the cat sat on the mat \xff\xfe " * 20)
    compare = ("compare", "--headless", "--text", "the cat", "--corpus", str(corpus))
    refused(run_cli(*compare), "corpus.txt: not valid UTF-8 at byte offset 23 (use --errors replace")
    done = run_cli(*compare, "--errors", "replace", "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["rows"]}
    assert rows["word (corpus.txt)"]["tokens"] == 2 and rows["Unigram (corpus.txt)"]["unknown"] == 0


def test_unsupported_model_without_the_package(models: Path, tmp_path: Path) -> None:
    """A ``tokenizers`` that cannot be imported stands in for a missing package; an NFKC
    normalizer is one the engine does not reproduce, so only ``tokenizers`` could open it."""
    (tmp_path / "tokenizers.py").write_text("raise ImportError('not installed')\n")
    nfkc = json.loads((models / "unigram.json").read_text(encoding="utf-8"))
    nfkc["normalizer"] = {"type": "NFKC"}
    (tmp_path / "unigram.json").write_text(json.dumps(nfkc), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "bpe_tui.cli", "compare", "--headless", "--text", "x", "--model", str(tmp_path / "unigram.json")],
        cwd=ROOT, env={**CLI_ENV, "PYTHONPATH": f"{tmp_path}:{ROOT}"}, capture_output=True, text=True,
    )  # fmt: skip
    refused(done, "a Unigram tokenizer opens through Hugging Face tokenizers: pip install 'bpe-tui[hf]'")
