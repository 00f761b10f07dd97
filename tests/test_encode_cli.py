"""``bpe-tui encode --headless`` run as a user would, in a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from engine import Tokenizer, Trainer
from tests.conftest import fixture_file, refused, run_cli

TEXT = "the tech tests: lowest 你好<|endoftext|> newer"


def encode(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("encode", *args, stdin=stdin)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = "the tech team tests the tokenizer; lowest newer widest. 你好 " * 30
    trainer = Trainer.from_text(corpus, 300, ["<|endoftext|>"])
    trainer.run()
    out = tmp_path_factory.mktemp("model")
    Tokenizer.from_trainer(trainer).save_dir(out)
    return out


def test_json_ids_equal_encode(model_dir: Path) -> None:
    for model in (model_dir, model_dir / "tokenizer.json"):
        done = encode("--model", str(model), "--headless", "--json", "--text", TEXT)
        assert done.returncode == 0, done.stderr
        tokens = json.loads(done.stdout)
        assert [t["id"] for t in tokens] == Tokenizer.load(model).encode(TEXT)
        assert b"".join(bytes(t["bytes"]) for t in tokens) == TEXT.encode()
        assert {"id", "bytes", "text"} == set(tokens[0])


def test_headless_prints_tokens_ids_and_counts(model_dir: Path) -> None:
    done = encode("--model", str(model_dir), "--headless", "--text", TEXT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    ids = Tokenizer.load(model_dir).encode(TEXT)
    id_lines = [line for line in lines[:-2] if line.split() and all(n.isdigit() for n in line.split())]
    assert [int(n) for line in id_lines for n in line.split()] == ids
    assert "<|endoftext|>" in done.stdout
    assert f"{len(ids)} tokens · {len(TEXT.encode())} bytes" in lines[-2]
    assert "as plain UTF-8 bytes" in lines[-1]


def test_an_empty_text_has_no_bytes_per_token(model_dir: Path) -> None:
    """Neither the tokenizer's count nor the plain bytes' gives a figure for no tokens."""
    done = encode("--model", str(model_dir), "--headless", "--text", "")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["0 tokens · 0 bytes · 0 characters", "as plain UTF-8 bytes: 0 tokens"]


def test_a_file_not_utf8_is_refused_as_a_corpus_is(model_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("the café\n".encode("latin-1"))
    done = encode("--model", str(model_dir), "--headless", "--file", str(tmp_path / "latin1.txt"))
    assert refused(done) == f"bpe-tui: {tmp_path / 'latin1.txt'}: not valid UTF-8 at byte offset 7"


def test_file_and_stdin(model_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "text.txt"
    path.write_text("low\nlower\n", encoding="utf-8")
    ids = Tokenizer.load(model_dir).encode("low\nlower\n")
    from_file = encode("--model", str(model_dir), "--json", "--file", str(path))
    from_stdin = encode("--model", str(model_dir), "--headless", "--json", stdin="low\nlower\n")
    for done in (from_file, from_stdin):
        assert done.returncode == 0, done.stderr
        assert [t["id"] for t in json.loads(done.stdout)] == ids


def test_gpt2_files(tmp_path: Path) -> None:
    shutil.copy(fixture_file("gpt2_vocab.json"), tmp_path / "vocab.json")
    shutil.copy(fixture_file("gpt2_merges.txt"), tmp_path / "merges.txt")
    done = encode("--model", str(tmp_path), "--headless", "--json", "--text", "Hello world! tech<|endoftext|>")
    assert done.returncode == 0, done.stderr
    assert [t["id"] for t in json.loads(done.stdout)] == [15496, 995, 0, 7261, 50256]


@pytest.mark.parametrize(
    "make_args, expected",
    [
        (lambda d, t: ["--model", str(t / "nowhere"), "--headless", "--text", "x"], "nowhere"),
        (lambda d, t: ["--model", str(d), "--headless", "--file", str(t / "missing.txt")], "missing.txt"),
        (lambda d, t: ["--model", str(d), "--headless", "--file", str(t / "latin1.txt")], "not valid UTF-8 at byte offset"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(model_dir: Path, tmp_path: Path, make_args, expected: str) -> None:
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    refused(encode(*make_args(model_dir, tmp_path)), expected)
