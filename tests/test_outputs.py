"""Outputs: checked before the work, written whole or not at all. A path that cannot be
written is one line before anything is read; a full disk is one line and no partial file;
a run killed outright leaves only a temporary file, which the next run into the same place
removes; saving over tokenizer files says which."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bpe_tui.cli import main
from engine import BpeError, OutputError, Tokenizer, Trainer
from engine.formats import atomic
from engine.formats.atomic import atomic_write
from tests.conftest import CLI_ENV, ROOT, fixture_file, refused, run_cli

SPECIAL = "<|endoftext|>"
TEXT = "the cat sat on the mat, the cat ate the rat\n" * 50


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    trainer = Trainer.from_text(TEXT, 300, [SPECIAL])
    trainer.run()
    directory = tmp_path_factory.mktemp("model")
    Tokenizer.from_trainer(trainer).save_dir(directory)
    return directory


@pytest.fixture()
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    return path


def left(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- checked before the work ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "out", "expected"),
    [
        (lambda d: (d / "ids.bin.json").mkdir(), "ids.bin", "--out ids.bin: its sidecar ids.bin.json: is a directory, not a file"),
        (lambda d: (d / "ids.bin").mkdir(), "ids.bin", "--out ids.bin: is a directory, not a file"),
        (lambda d: (d / "file").write_text("x"), "file/ids.bin", "--out file/ids.bin: file is not a directory"),
        (lambda d: None, "gone/ids.bin", "--out gone/ids.bin: gone does not exist"),
    ],
)
def test_encode_out_that_cannot_be_written_is_refused_before_reading(tmp_path, model, make, out, expected):
    make(tmp_path)
    before = left(tmp_path)
    # Standard input left open: were it read, the command would wait for it, not refuse.
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpe_tui.cli", "encode", "--model", str(model), "--file", "-", "--out", out],
        cwd=tmp_path,
        env=CLI_ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    refused(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), expected)
    assert left(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--out", "out"], "--out out: out/tokenizer.json is a directory, not a file"),
        (["--out", "out", "--classic"], None),
        (["--out", "elsewhere", "--save-counts", "out"], "--save-counts out: is a directory, not a file"),
    ],
)
def test_train_out_that_cannot_be_written_is_refused_before_counting(tmp_path, corpus, args, expected):
    (tmp_path / "out" / "tokenizer.json").mkdir(parents=True)
    done = run_cli("train", "-", "--headless", "--vocab-size", "270", *args, cwd=tmp_path, stdin=TEXT)
    if expected is None:  # classic BPE writes classic_bpe.json: the directory there is no obstacle
        assert done.returncode == 0, done.stderr
        return
    refused(done, expected)
    assert left(tmp_path) == ["corpus.txt", "out"] and left(tmp_path / "out") == ["tokenizer.json"]


# -- a full disk ----------------------------------------------------------------------------------


@pytest.fixture()
def small_disk(tmp_path) -> Iterator[Path]:
    """A 1 MB filesystem of its own (tmpfs), where one is allowed to be mounted."""
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_disk_that_fills_up_is_one_line_and_no_partial_file(small_disk, model, tmp_path):
    """Encoding 6.6 MB of text into a 1 MB disk; then training into what is left of it."""
    text = tmp_path / "en.txt"
    text.write_bytes(fixture_file("en-mix-192k.txt").read_bytes() * 34)
    refused(
        run_cli("encode", "--model", str(model), "--file", str(text), "--out", str(small_disk / "ids.bin")),
        f"{small_disk}/ids.bin: cannot write it (No space left on device)",
    )
    assert left(small_disk) == []
    with open(small_disk / "filler", "wb") as f, pytest.raises(OSError, match="No space left"):
        f.write(b"\0" * (2 << 20))
        f.flush()
    refused(  # the counts are kept as they are counted, beside the file they are bound for
        run_cli("train", str(text), "--headless", "--vocab-size", "300", "--save-counts", str(small_disk / "c.counts")),
        f"{small_disk}/c.counts.parts: cannot keep counts there (No space left on device)",
    )
    tok = small_disk / "tok"
    refused(
        run_cli("train", str(text), "--headless", "--vocab-size", "300", "--out", str(tok)), "cannot write it (No space left on device)"
    )
    assert left(small_disk) in (["filler"], ["filler", "tok"]) and not (tok.exists() and left(tok))


@pytest.fixture()
def no_space(monkeypatch) -> None:
    """Every atomic write fails as a full disk makes it fail (where no tmpfs can be mounted)."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)


def test_a_write_error_is_an_output_error_and_leaves_nothing(tmp_path, capsys, model, corpus, no_space):
    with pytest.raises(OutputError, match=f"^{tmp_path}/a.txt: cannot write it \\(No space left on device\\)$") as caught:
        atomic_write(tmp_path / "a.txt", "text")
    assert isinstance(caught.value, BpeError) and isinstance(caught.value, OSError)
    assert main(["encode", "--model", str(model), "--file", str(corpus), "--out", str(tmp_path / "ids.bin")]) == 2
    assert main(["train", str(corpus), "--headless", "--vocab-size", "270", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"bpe-tui: {tmp_path}/ids.bin: cannot write it (No space left on device)",
        f"bpe-tui: {tmp_path}/out/tokenizer.json: cannot write it (No space left on device)",
    ]
    assert left(tmp_path) == ["corpus.txt", "out"] and left(tmp_path / "out") == []


# -- killed outright ------------------------------------------------------------------------------


def dead_pid() -> int:
    """The pid of a process that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_encode_killed_leaves_its_temporary_file_which_the_next_run_removes(tmp_path, model, corpus):
    """Killed with SIGKILL while reading a stream that never ends: nothing under the final
    names; the next run into the same place removes the temporary file."""
    out = tmp_path / "ids.bin"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bpe_tui.cli", "encode", "--model", str(model), "--file", "-", "--out", str(out)],
        cwd=ROOT,
        env=CLI_ENV,
        stdin=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(TEXT.encode())
    proc.stdin.flush()
    deadline = time.monotonic() + 120
    while not (temporaries := [p for p in tmp_path.iterdir() if p.name.startswith(".ids.bin.")]):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    [temporary] = temporaries
    assert temporary.name.startswith(f".ids.bin.{proc.pid}.") and temporary.name.endswith(".tmp")
    assert left(tmp_path) == sorted(["corpus.txt", temporary.name])  # nothing under ids.bin
    assert main(["encode", "--model", str(model), "--file", str(corpus), "--out", str(out)]) == 0
    assert left(tmp_path) == ["corpus.txt", "ids.bin", "ids.bin.json"]


def test_train_removes_temporaries_of_writers_that_are_gone(tmp_path, corpus):
    out = tmp_path / "out"
    out.mkdir()
    gone = out / f".tokenizer.json.{dead_pid()}.abcd1234.tmp"
    alive = out / f".merges.txt.{os.getpid()}.abcd1234.tmp"  # a writer still at work: left alone
    for tmp in (gone, alive):
        tmp.write_bytes(b"partial")
    assert main(["train", str(corpus), "--headless", "--vocab-size", "270", "--out", str(out)]) == 0
    assert left(out) == sorted(["merges.txt", "tokenizer.json", "vocab.json", alive.name])


def test_headless_train_says_which_files_it_replaced(tmp_path, corpus):
    first = run_cli("train", str(corpus), "--headless", "--vocab-size", "265", cwd=tmp_path)
    assert first.returncode == 0 and "replaced" not in first.stderr
    again = run_cli("train", str(corpus), "--headless", "--vocab-size", "270", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr.strip() == "bpe-tui: replaced out/tokenizer.json, out/vocab.json, out/merges.txt"
    assert len(Tokenizer.load(tmp_path / "out").merges) == 270 - 257


def test_encode_out_says_which_files_it_replaced(tmp_path, corpus, model):
    command = ("encode", "--model", str(model), "--file", str(corpus), "--out", "ids.bin")
    first = run_cli(*command, cwd=tmp_path)
    assert first.returncode == 0 and "replaced" not in first.stderr
    again = run_cli(*command, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr.strip() == "bpe-tui: replaced ids.bin, ids.bin.json"
