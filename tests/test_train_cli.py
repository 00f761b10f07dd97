"""``bpe-tui train --headless`` run as a user runs it: a subprocess, then its files loaded back."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine import Tokenizer
from tests.conftest import CLI_ENV, ROOT, fixture_file, refused, run_cli


def test_headless_on_the_bundled_sample_writes_a_loadable_tokenizer(tmp_path):
    done = run_cli("train", "--headless", "--vocab-size", "400", "--out", str(tmp_path / "tok"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "143 of 143" in done.stdout and "bytes/token" in done.stdout
    assert sorted(p.name for p in (tmp_path / "tok").iterdir()) == ["merges.txt", "tokenizer.json", "vocab.json"]

    tokenizer = Tokenizer.load(tmp_path / "tok" / "tokenizer.json")
    assert len(tokenizer.vocab) == 400 and tokenizer.special_tokens == ["<|endoftext|>"]
    text = "The lighthouse cat sat by the window.<|endoftext|>小河边的灯"
    assert tokenizer.decode(tokenizer.encode(text)) == text
    assert len(tokenizer.encode(" the lighthouse")) < len(" the lighthouse")

    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json"))
    assert hf.encode(text).ids == tokenizer.encode(text)


def test_headless_defaults_to_out_and_takes_settings(tmp_path):
    corpus = tmp_path / "toy.txt"
    corpus.write_text("low low low low low lower lower widest widest widest newest newest newest\n" * 3)
    done = run_cli(
        "train",
        str(corpus),
        "--headless",
        "--vocab-size",
        "270",
        "--special-token",
        "<s>",
        "--pattern",
        "gpt4",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    model = json.loads((tmp_path / "out" / "tokenizer.json").read_text(encoding="utf-8"))
    assert [t["content"] for t in model["added_tokens"]] == ["<s>"]
    assert len(Tokenizer.load(tmp_path / "out").merges) == 270 - 257


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.txt"], "missing.txt: no such file"),
        (["--vocab-size", "100"], "vocab size 100 is below 257"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    refused(run_cli("train", *args, "--headless", cwd=tmp_path), message)


def test_a_log_gets_a_progress_line_now_and_then(tmp_path):
    """stderr no terminal (a log): no bars, but every BPE_TUI_PROGRESS_SECONDS a line with
    how far counting is, its rate and the time left."""
    corpus = tmp_path / "big.txt"
    corpus.write_bytes(fixture_file("en-mix-192k.txt").read_bytes() * 60)
    command = [sys.executable, "-m", "bpe_tui.cli", "train", str(corpus), "--headless", "--vocab-size", "300", "--workers", "1"]
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "tok")],
        cwd=ROOT,
        env={**CLI_ENV, "BPE_TUI_PROGRESS_SECONDS": "0.02"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith(("pre-tokenizing", "merging")) for line in lines)
    assert any("MB/s" in line and "/11.8 MB" in line for line in lines)
    quiet = subprocess.run([*command, "--out", str(tmp_path / "tok2")], cwd=ROOT, env=CLI_ENV, capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stderr == ""  # shorter than the default 30 s: nothing


def test_bars_on_a_terminal_are_drawn_without_a_thread(monkeypatch):
    """A thread beside the main one makes counting start its workers from a fork server,
    much slower than forking: the bars are drawn at updates, not by a thread of rich's."""
    import io
    import threading

    from rich.console import Console

    from bpe_tui.common import progress_bars as bars

    monkeypatch.setattr(bars, "DRAW_SECONDS", 0)
    out = io.StringIO()
    progress = bars.progress_bars(Console(file=out, force_terminal=True, width=100))
    task = progress.add_task("pre-tokenizing", total=100, unit="bytes")
    before = threading.active_count()
    with progress:
        progress.update(task, completed=42)
        assert threading.active_count() == before
    assert "42%" in out.getvalue()
