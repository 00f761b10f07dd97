"""``bpe-tui train --classic`` run as a user runs it: the summary, the model file, refusals."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import ROOT, refused, run_cli
from tests.test_classic import deepseek_counts, seed_002

TOY = str(ROOT / "sample_corpora" / "toy-low-lower.txt")


def test_headless_writes_the_classic_model(tmp_path):
    done = run_cli("train", TOY, "--classic", "--headless", "--vocab-size", "23", "--out", str(tmp_path / "m"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "12 of 12" in done.stdout and "23 strings (11 starting symbols" in done.stdout
    assert "chars/token (79 chars → 22 tokens)" in done.stdout
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["classic_bpe.json"]
    model = json.loads((tmp_path / "m" / "classic_bpe.json").read_text(encoding="utf-8"))
    assert model["type"] == "classic-bpe" and model["end_of_word"] == "</w>" and model["split"] == "whitespace"
    assert [" ".join(m) for m in model["merges"]] == [
        "e s", "es t", "est </w>", "l o", "lo w", "n e", "ne w", "new est</w>", "low </w>", "w i", "wi d", "wid est</w>",
    ]  # fmt: skip
    assert model["vocab"][:11] == ["</w>", "d", "e", "i", "l", "n", "o", "r", "s", "t", "w"] and len(model["vocab"]) == 23


def test_headless_words_punct_reproduces_seed_002(tmp_path):
    notes = seed_002()
    text = notes[notes.index("text = '''") + 10 :]
    corpus = tmp_path / "deepseek.txt"
    corpus.write_text(text[: text.index("'''")], encoding="utf-8")
    alphabet = len({c for w in deepseek_counts() for c in w}) + 1
    done = run_cli("train", str(corpus), "--classic", "--words", "punct", "--headless", "--vocab-size", str(alphabet + 36), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    model = json.loads((tmp_path / "out" / "classic_bpe.json").read_text(encoding="utf-8"))
    assert model["split"] == "punct" and len(model["merges"]) == 36
    assert model["merges"][:3] == [["-", "</w>"], ["e", "</w>"], ["e", "e"]] and model["merges"][-1] == ["c", "e</w>"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pattern", "gpt4"], "--pattern does not apply to --classic"),
        (["--special-token", "<s>"], "--special-token does not apply to --classic"),
        (["--workers", "2"], "--workers does not apply to --classic"),
        (["--resume", "out"], "--resume does not apply to --classic"),
        (["--vocab-size", "5"], "vocab size 5 is below the 11 symbols this corpus starts with"),
    ],
)
def test_options_classic_has_no_use_for_are_refused(tmp_path, args, message):
    refused(run_cli("train", TOY, "--classic", "--headless", *args, cwd=tmp_path), message)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", [["--classic"], ["--algorithm", "wordpiece"], ["--algorithm", "unigram"]])
@pytest.mark.parametrize(
    ("name", "what"),
    [("d.jsonl", "JSONL"), ("d.txt.gz", "gzip-compressed"), ("d.jsonl.zst", "zstd-compressed JSONL"), ("d.parquet", "Parquet")],
)
def test_word_level_training_refuses_all_but_plain_text(tmp_path, flag, name, what):
    """These trainers read their file's bytes as words: JSONL would train on its syntax, a
    compressed file on its compressed bytes."""
    text = b'{"text": "low lower lowest"}\n'
    (tmp_path / name).write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    done = run_cli("train", name, *flag, "--headless", "--vocab-size", "300", cwd=tmp_path)
    refused(done, f"{' '.join(flag)} reads its words from one plain-text file: {name} is {what}")
    assert not (tmp_path / "out").exists()


def test_words_without_classic_is_refused(tmp_path):
    refused(run_cli("train", TOY, "--words", "punct", "--headless", cwd=tmp_path), "--words goes with --classic")


def test_a_corpus_of_only_whitespace_is_refused(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text(" \n\t \n", encoding="utf-8")
    refused(run_cli("train", str(blank), "--classic", "--headless", cwd=tmp_path), "blank.txt: it holds nothing but whitespace")
