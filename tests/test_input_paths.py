"""Input paths as real machines have them: links that loop or lead nowhere, unreadable and
special files, streams (standard input, named pipes), and compressed files cut short. Each
bad one is one line naming it, exit 2, nothing written; a stream trains as its file does."""

from __future__ import annotations

import errno
import gzip
import json
import os
import pty
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bpe_tui.cli import main
from engine import CorpusError, PreTokenizer, Tokenizer, Trainer, train_bpe
from engine.corpus import counting, shared_blocks
from engine.corpus.counting import count_inputs, count_table
from engine.corpus.shards import PROGRESS_BYTES, Block, CountSettings
from engine.corpus.shared_blocks import BlocksClosed, SharedBlocks
from engine.corpus.sources import find_inputs
from tests.conftest import CLI_ENV, ROOT, fixture_file, refused, run_cli, zstd_compress
from tests.test_inputs import DOCS, SPECIAL, write

GOOD = "the cat sat on the mat, the cat ate the rat\n" * 40


def cli(*args: str, stdin: bytes | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``bpe-tui ARGS`` in a fresh process, fed ``stdin`` as bytes."""
    done = subprocess.run([sys.executable, "-m", "bpe_tui.cli", *args], cwd=cwd, env=CLI_ENV, input=stdin, capture_output=True, timeout=300)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def merges(directory: Path) -> list[tuple[bytes, bytes]]:
    return Tokenizer.load(directory).merges


# -- bad files in directories and globs --------------------------------------------------------


def _loop(d: Path) -> None:
    (d / "loop").symlink_to("loop")


def _broken(d: Path) -> None:
    (d / "broken.txt").symlink_to("nowhere.txt")


def _up(d: Path) -> None:
    (d / "sub").mkdir()
    (d / "sub" / "up").symlink_to("..")


def _socket(d: Path) -> None:
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(d / "sock"))


def _fifo(d: Path) -> None:
    os.mkfifo(d / "pipe")


def _device(d: Path) -> None:
    (d / "null").symlink_to("/dev/null")


BAD_FILES = {
    "loop": (_loop, "loop: a symbolic link loop"),
    "broken": (_broken, "broken.txt: a broken symbolic link (to nowhere.txt, which does not exist)"),
    "up": (_up, "up: a symbolic link loop (it leads back to"),
    "socket": (_socket, "sock: a socket, not a file"),
    "fifo": (_fifo, "pipe: a named pipe (name it as an input of its own to read it as a stream), not a file"),
    "device": (_device, "null: a character device, not a file"),
    "unknown": (lambda d: (d / "notes.pdf").write_bytes(b"%PDF"), "notes.pdf: unknown extension .pdf"),
}


@pytest.fixture()
def corpus_dir(tmp_path) -> Path:
    """A directory with one good file; a test adds a bad one beside it."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "good.txt").write_text(GOOD)
    return d


@pytest.mark.parametrize("kind", BAD_FILES)
def test_a_bad_file_in_a_directory_is_one_line_before_any_counting(tmp_path, corpus_dir, kind):
    make, expected = BAD_FILES[kind]
    make(corpus_dir)
    line = refused(run_cli("train", "d", "--headless", "--vocab-size", "270", cwd=tmp_path), expected)
    assert line.startswith("bpe-tui: d/") and line.endswith("; --skip-bad-inputs skips such files")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no out, no counts


@pytest.mark.parametrize("kind", BAD_FILES)
def test_skip_bad_inputs_trains_on_the_rest_and_lists_what_it_skipped(tmp_path, corpus_dir, kind):
    make, expected = BAD_FILES[kind]
    make(corpus_dir)
    done = run_cli("train", "d", "--headless", "--vocab-size", "270", "--skip-bad-inputs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "bad inputs   1 skipped" in done.stdout and expected.split(": ")[0] in done.stdout
    assert done.stderr.strip() == "bpe-tui: skipped 1 bad input (--skip-bad-inputs)"
    assert merges(tmp_path / "out") == train_bpe(corpus_dir / "good.txt", 270, [SPECIAL])[1]


def test_a_glob_that_turns_up_a_broken_link_is_refused_or_skipped(tmp_path, corpus_dir):
    _broken(corpus_dir)
    refused(run_cli("train", "d/*.txt", "--headless", cwd=tmp_path), "d/broken.txt: a broken symbolic link")
    found = find_inputs([f"{corpus_dir}/*.txt"], skip_bad=True)
    assert [s.path for s in found.sources] == [str(corpus_dir / "good.txt")]
    assert found.skipped == [f"{corpus_dir}/broken.txt: a broken symbolic link (to nowhere.txt, which does not exist)"]


def test_links_to_files_and_directories_are_followed(tmp_path, corpus_dir):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "more.jsonl").write_text(json.dumps({"text": "more text"}) + "\n")
    (corpus_dir / "more").symlink_to(elsewhere)
    (corpus_dir / "again.txt").symlink_to("good.txt")
    names = [s.path for s in find_inputs([corpus_dir]).sources]
    assert names == [str(corpus_dir / n) for n in ("again.txt", "good.txt", "more/more.jsonl")]


def test_every_file_bad_is_nothing_to_read(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    _loop(d)
    _broken(d)
    refused(
        run_cli("train", "d", "--headless", "--skip-bad-inputs", cwd=tmp_path),
        "nothing to read: every file is bad and skipped (2), the first d/broken.txt: a broken symbolic link",
    )


@pytest.mark.parametrize(
    ("make", "name", "expected"),
    [
        (_loop, "loop", "loop: a symbolic link loop"),
        (_broken, "broken.txt", "broken.txt: a broken symbolic link (to nowhere.txt"),
        (_socket, "sock", "sock: a socket, not a file"),
        (_device, "null", "null: a character device, not a file"),
    ],
)
def test_a_bad_path_named_on_the_command_line_is_refused_even_with_skip(tmp_path, make, name, expected):
    make(tmp_path)
    for skip in ((), ("--skip-bad-inputs",)):
        line = refused(run_cli("train", name, "--headless", *skip, cwd=tmp_path), expected)
        assert "--skip-bad-inputs" not in line  # a path typed is meant: it is not skipped
    assert not (tmp_path / "out").exists()


def test_unreadable_files_and_directories_are_bad_inputs():
    """Seen by a user who may not read them (root reads everything): a process of its own."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to look as another user")
    top = Path(tempfile.mkdtemp())  # under /tmp, which any user may enter
    try:
        os.chmod(top, 0o755)
        (top / "good.txt").write_text(GOOD)
        (top / "secret.txt").write_text("private")
        (top / "locked").mkdir()
        (top / "locked" / "inside.txt").write_text("private")
        os.chmod(top / "secret.txt", 0o600)
        os.chmod(top / "locked", 0o700)
        read, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: become nobody, look, report
            try:
                os.setgid(65534)
                os.setuid(65534)
                found = find_inputs([top], skip_bad=True)
                os.write(write_end, json.dumps([[s.path for s in found.sources], found.skipped]).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read) as f:
            sources, skipped = json.loads(f.read())
        os.waitpid(pid, 0)
        assert sources == [str(top / "good.txt")]
        assert skipped == [f"{top}/locked: permission denied", f"{top}/secret.txt: permission denied"]
    finally:
        shutil.rmtree(top)


# -- streams ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text_corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stream") / "docs.txt.gz"
    return write(path, DOCS * 20)


def test_a_gzip_piped_into_standard_input_trains_the_merges_of_the_file(tmp_path, text_corpus):
    """``zcat x.gz | bpe-tui train - --headless`` is ``bpe-tui train x.gz``."""
    files = cli("train", str(text_corpus), "--headless", "--vocab-size", "300", "--out", "file", cwd=tmp_path)
    piped = cli(
        "train", "-", "--headless", "--vocab-size", "300", "--out", "pipe", stdin=gzip.decompress(text_corpus.read_bytes()), cwd=tmp_path
    )
    assert files.returncode == piped.returncode == 0, files.stderr + piped.stderr
    assert merges(tmp_path / "pipe") == merges(tmp_path / "file")
    assert "standard input" in piped.stdout


def test_jsonl_on_standard_input_needs_stdin_format(tmp_path):
    jsonl = write(tmp_path / "docs.jsonl", DOCS)
    files = cli("train", str(jsonl), "--headless", "--vocab-size", "300", "--out", "file", cwd=tmp_path)
    piped = cli(
        "train",
        "-",
        "--stdin-format",
        "jsonl",
        "--headless",
        "--vocab-size",
        "300",
        "--out",
        "pipe",
        stdin=jsonl.read_bytes(),
        cwd=tmp_path,
    )
    assert files.returncode == piped.returncode == 0, files.stderr + piped.stderr
    assert merges(tmp_path / "pipe") == merges(tmp_path / "file")
    as_text = cli("train", "-", "--headless", "--vocab-size", "300", "--out", "text", stdin=jsonl.read_bytes(), cwd=tmp_path)
    assert as_text.returncode == 0 and merges(tmp_path / "text") != merges(tmp_path / "file")  # read as plain text, braces and all


@pytest.fixture()
def named_pipe(tmp_path) -> Iterator[Callable[[bytes], Path]]:
    """Makes the named pipe ``pipe.jsonl``, which a thread fills with the bytes given once a
    reader opens it."""
    path = tmp_path / "pipe.jsonl"
    writers: list[threading.Thread] = []

    def fill(data: bytes) -> Path:
        os.mkfifo(path)
        writer = threading.Thread(target=path.write_bytes, args=(data,), daemon=True)
        writer.start()
        writers.append(writer)
        return path

    yield fill
    for writer in writers:
        writer.join(timeout=60)


def test_a_named_pipe_is_read_as_its_name_says(tmp_path, named_pipe):
    jsonl = write(tmp_path / "docs.jsonl", DOCS)
    path = named_pipe(jsonl.read_bytes())
    done = cli("train", str(path), "--headless", "--vocab-size", "300", "--out", "pipe", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert merges(tmp_path / "pipe") == train_bpe(jsonl, 300, [SPECIAL])[1]


def test_a_stream_beside_files_counted_by_workers_gives_the_counts_of_the_files(monkeypatch, tmp_path, named_pipe):
    """Workers take the files; the stream is counted here, as it arrives; progress has no total."""
    monkeypatch.setattr(counting, "IN_PROCESS", 0)
    parts = [write(tmp_path / f"part{i}.jsonl", DOCS[i::3]) for i in range(3)]
    path = named_pipe(parts[1].read_bytes())
    totals = set()
    settings = CountSettings(special_tokens=(SPECIAL,))
    streamed, summary = count_inputs([parts[0], path, parts[2]], settings, workers=2, shard_bytes=64, progress=lambda *a: totals.add(a[2]))
    assert streamed == count_inputs(parts, settings, workers=1)[0]
    assert totals == {None}
    assert dict(summary.inputs)[str(path)] == parts[1].stat().st_size  # a stream's size is what was read


def fifo_of(path: Path, data: bytes) -> threading.Thread:
    """Make ``path`` a named pipe that a thread fills with ``data`` once a reader opens it."""
    os.mkfifo(path)
    writer = threading.Thread(target=path.write_bytes, args=(data,), daemon=True)
    writer.start()
    return writer


@pytest.mark.parametrize("suffix", ["txt", "jsonl"])
def test_a_long_stream_alone_is_counted_on_every_core(monkeypatch, tmp_path, suffix):
    """Past its first STREAM_IN_PROCESS bytes a stream is fed to the workers a block at a time: the
    counts, bytes and digest of the same bytes as a file."""
    monkeypatch.setattr(counting, "STREAM_IN_PROCESS", 2000)
    source = tmp_path / f"docs.{suffix}"
    if suffix == "jsonl":
        write(source, DOCS * 30)
    else:
        source.write_text(GOOD * 40)
    writer = fifo_of(tmp_path / f"pipe.{suffix}", source.read_bytes())
    fed: list[Block] = []
    count_parallel = counting._count_parallel

    def feeding(*args: Any, feed: Any = None, **kwargs: Any) -> Any:
        if feed is not None:
            feed.blocks = (fed.append(block) or (i, shard, block) for i, shard, block in feed.blocks)
        return count_parallel(*args, feed=feed, **kwargs)

    monkeypatch.setattr(counting, "_count_parallel", feeding)
    made: list[SharedBlocks] = []
    monkeypatch.setattr(counting, "SharedBlocks", lambda *args: made.append(SharedBlocks(*args)) or made[-1])
    settings = CountSettings(special_tokens=(SPECIAL,), block_bytes=1024)  # blocks of a KB, however the pipe delivers them
    streamed, summary = count_inputs([tmp_path / f"pipe.{suffix}"], settings, workers=2)
    writer.join(timeout=60)
    assert len(fed) > 2  # it went to the workers
    # in slots of shared memory, whose file is gone
    assert all(block.slot >= 0 for block in fed)
    assert len(made) == 1 and not os.path.exists(made[0].path)
    counted, whole = count_inputs([source], settings, workers=1, shard_bytes=1 << 30)
    assert streamed == counted
    assert summary.bytes_read == whole.bytes_read and summary.digest == whole.digest


def test_a_long_stream_counted_by_one_worker_comes_sorted_as_its_file(monkeypatch, tmp_path):
    """Past IN_PROCESS bytes the pre-tokens come sorted (the merge loop runs faster over them
    in order), a stream's as a file's."""
    monkeypatch.setattr(counting, "IN_PROCESS", 1000)
    source = tmp_path / "docs.txt"
    source.write_text(GOOD * 4)
    writer = fifo_of(tmp_path / "pipe.txt", source.read_bytes())
    settings = CountSettings(special_tokens=(SPECIAL,))
    streamed = count_table([tmp_path / "pipe.txt"], settings, workers=1)[0]
    writer.join(timeout=60)
    from_file = count_table([source], settings, workers=1)[0]
    assert list(streamed.items()) == list(from_file.items()) == sorted(from_file.items())


@pytest.mark.parametrize("suffix", ["jsonl", "txt"])
def test_bad_input_in_the_fed_part_of_a_stream_is_one_line(monkeypatch, tmp_path, suffix):
    """Counted by a worker, a block far into the stream is named where it is bad: its line,
    or its byte."""
    monkeypatch.setattr(counting, "STREAM_IN_PROCESS", 2000)
    good = write(tmp_path / "docs.jsonl", DOCS * 30).read_bytes()
    path = tmp_path / f"pipe.{suffix}"
    writer = fifo_of(path, good + (b"not json\n" if suffix == "jsonl" else b"caf\xe9 ok\n"))
    lines = good.count(b"\n")
    where = f"line {lines + 1}" if suffix == "jsonl" else f"not valid UTF-8 at byte offset {len(good) + 3}"
    with pytest.raises(CorpusError, match=f"{path}: {where}"):
        count_inputs([path], CountSettings(special_tokens=(SPECIAL,), block_bytes=1024), workers=2)
    writer.join(timeout=60)


@pytest.mark.parametrize("full", [[shared_blocks.SHM], [shared_blocks.SHM, tempfile.gettempdir()]], ids=["shm", "both"])
def test_a_stream_without_room_in_shared_memory_counts_all_the_same(monkeypatch, tmp_path, full):
    """No room in /dev/shm (a container's is 64 MB): the slots are made in the temporary
    folder; no room there either: the blocks go through the queue. The same counts."""
    monkeypatch.setattr(counting, "STREAM_IN_PROCESS", 2000)
    mapped_in = shared_blocks._mapped_in
    made: list[str] = []

    def no_room(folder: str, size: int) -> Any:
        if folder in full:
            raise OSError(errno.ENOSPC, "No space left on device")
        made.append(folder)
        return mapped_in(folder, size)

    monkeypatch.setattr(shared_blocks, "_mapped_in", no_room)
    source = tmp_path / "docs.txt"
    source.write_text(GOOD * 40)
    writer = fifo_of(tmp_path / "pipe.txt", source.read_bytes())
    settings = CountSettings(special_tokens=(SPECIAL,), block_bytes=1024)
    streamed, summary = count_inputs([tmp_path / "pipe.txt"], settings, workers=2)
    writer.join(timeout=60)
    assert made == ([] if len(full) == 2 else [tempfile.gettempdir()])
    counted, whole = count_inputs([source], settings, workers=1, shard_bytes=1 << 30)
    assert streamed == counted and summary.digest == whole.digest


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the worker process in /proc (Linux)")
def test_a_count_killed_while_reading_a_stream_leaves_no_slots_behind(tmp_path):
    """Once every counter maps the slots, their file's name goes: a count killed then (out
    of memory, say) leaves nothing in /dev/shm."""
    shm, fifo = tmp_path / "shm", tmp_path / "pipe.txt"
    shm.mkdir()
    os.mkfifo(fifo)
    script = (
        "from engine.corpus import counting, shared_blocks\n"
        "from engine.corpus.shards import CountSettings\n"
        f"shared_blocks.SHM = {str(shm)!r}\n"
        "counting.STREAM_IN_PROCESS = 2000\n"
        f"counting.count_inputs([{str(fifo)!r}], CountSettings(block_bytes=1024), workers=2)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], env=CLI_ENV, cwd=ROOT)
    try:
        with fifo.open("wb") as f:
            f.write(GOOD.encode() * 40)  # past the first 2000 bytes: the workers are started; the stream goes on
            f.flush()
            workers = Path(f"/proc/{child.pid}/task/{child.pid}/children")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (workers.read_text().split() and not os.listdir(shm)):
                time.sleep(0.02)
            child.kill()
    finally:
        child.kill()
        child.wait()
    assert os.listdir(shm) == []


def test_a_reader_waiting_for_a_slot_stops_when_counting_does():
    """Counting stopped (an error, Ctrl-C) while the stream's reader waits for a free slot:
    it is told, and the slots' file is gone."""
    slots = SharedBlocks(1, 64)
    assert slots.take() == 0
    stopped = threading.Event()

    def wait() -> None:
        with pytest.raises(BlocksClosed):
            slots.take()
        stopped.set()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    assert not stopped.wait(0.3)
    slots.close()
    assert stopped.wait(10) and not os.path.exists(slots.path)


def test_bad_records_skipped_in_the_fed_part_of_a_stream_are_counted(monkeypatch, tmp_path):
    monkeypatch.setattr(counting, "STREAM_IN_PROCESS", 2000)
    good = write(tmp_path / "docs.jsonl", DOCS * 30).read_bytes()
    writer = fifo_of(tmp_path / "pipe.jsonl", good + b"not json\n" + good + b"[1]\n")
    settings = CountSettings(special_tokens=(SPECIAL,), block_bytes=1024, skip_bad_records=True)
    counts, summary = count_inputs([tmp_path / "pipe.jsonl"], settings, workers=2)
    writer.join(timeout=60)
    assert summary.bad_records == 2
    once = count_inputs([tmp_path / "docs.jsonl"], settings, workers=1)[0]
    assert counts == once + once


def test_a_slow_stream_reports_its_bytes_as_they_arrive(tmp_path):
    """Progress moves while the producer is still writing, not once a whole block has come."""
    path = tmp_path / "slow.txt"
    os.mkfifo(path)
    first = (GOOD * 3000).encode()[: PROGRESS_BYTES + 1000]  # more than one report's worth, less than a block
    reported = threading.Event()
    seen: list[bool] = []

    def produce() -> None:
        with path.open("wb") as f:
            f.write(first)
            f.flush()
            seen.append(reported.wait(timeout=120))  # the reader has reported before more comes
            f.write(b" and the end\n")

    def progress(phase: str, done: int, total: int | None) -> None:
        if phase == "read" and done >= PROGRESS_BYTES:
            reported.set()

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    settings = CountSettings(special_tokens=(SPECIAL,), block_bytes=4 * PROGRESS_BYTES)
    counts, summary = count_inputs([path], settings, workers=1, progress=progress)
    producer.join(timeout=120)
    assert seen == [True]
    assert summary.inputs == ((str(path), len(first) + len(b" and the end\n")),)
    assert counts == PreTokenizer("gpt2", [SPECIAL]).count((first + b" and the end\n").decode())


def test_encode_out_reads_standard_input_and_named_pipes(tmp_path, named_pipe):
    model = tmp_path / "model"
    Tokenizer.from_trainer(_trained()).save_dir(model)
    text = write(tmp_path / "docs.jsonl", DOCS)
    from_file = cli("encode", "--model", str(model), "--file", str(text), "--out", "file.bin", "--eot", cwd=tmp_path)
    args = ("encode", "--model", str(model), "--file", "-", "--stdin-format", "jsonl", "--out", "stdin.bin", "--eot")
    from_stdin = cli(*args, stdin=text.read_bytes(), cwd=tmp_path)
    from_pipe = cli(
        "encode", "--model", str(model), "--file", str(named_pipe(text.read_bytes())), "--out", "pipe.bin", "--eot", cwd=tmp_path
    )
    for done in (from_file, from_stdin, from_pipe):
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "stdin.bin").read_bytes() == (tmp_path / "pipe.bin").read_bytes() == (tmp_path / "file.bin").read_bytes()
    assert json.loads((tmp_path / "stdin.bin.json").read_text())["inputs"] == ["-"]


def _trained() -> Trainer:
    trainer = Trainer.from_text(" ".join(DOCS), 300, [SPECIAL])
    trainer.run()
    return trainer


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["train", "-"], "-: the app reads the keyboard from standard input: reading the corpus from it needs --headless"),
        (["train", "x.txt", "--stdin-format", "jsonl", "--headless"], "--stdin-format says how to read standard input"),
        (["race", "-", "--headless"], "the race reads its corpus once for each racer, and a stream"),
        (["encode", "--model", "m", "--file", "-"], "--file -: the app reads the keyboard from standard input"),
    ],
)
def test_what_a_stream_cannot_do_is_one_line(tmp_path, args, expected):
    (tmp_path / "x.txt").write_text(GOOD)
    Tokenizer.from_trainer(_trained()).save_dir(tmp_path / "m")
    refused(cli(*args, stdin=b"some text", cwd=tmp_path), expected)


def test_standard_input_from_a_terminal_is_refused_rather_than_waited_on(tmp_path):
    main_end, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bpe_tui.cli", "train", "-", "--headless"],
            cwd=tmp_path,
            env=CLI_ENV,
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(terminal)
        os.close(main_end)
    refused(done, "-: standard input is a terminal: pipe the corpus in")


def test_nothing_on_standard_input_is_one_line(tmp_path):
    refused(cli("train", "-", "--headless", stdin=b"", cwd=tmp_path), "standard input: nothing came in: no text to train on")


# -- compressed files cut short -----------------------------------------------------------------


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> dict[str, bytes]:
    """Compressed files of some size, so that cuts land inside their data."""
    text = fixture_file("corpus.en").read_bytes()
    files = {"c.txt.gz": gzip.compress(text), "c.txt.zst": zstd_compress(text)}
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path_factory.mktemp("parquet") / "c.parquet"
    lines = text.decode().splitlines()
    pq.write_table(pa.table({"text": lines}), path, row_group_size=len(lines) // 4)
    files["c.parquet"] = path.read_bytes()
    return files


CUTS = {"10%": lambda n: n // 10, "50%": lambda n: n // 2, "99%": lambda n: n * 99 // 100, "one byte short": lambda n: n - 1}


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("name", ["c.txt.gz", "c.txt.zst", "c.parquet"])
def test_a_compressed_file_cut_short_is_an_error_for_train_and_encode(tmp_path, capsys, whole, name, cut):
    data = whole[name]
    end = CUTS[cut](len(data))
    path = tmp_path / name
    path.write_bytes(data[:end])
    expected = (
        f"bpe-tui: {path}: cut short: a Parquet file ends with its footer, and this one stops at byte {end:,} without it"
        if name.endswith("parquet")
        else f"bpe-tui: {path}: cut short: its {'gzip' if name.endswith('gz') else 'zstd'} data stops unfinished at byte {end:,}"
    )
    model = tmp_path / "model"
    Tokenizer.from_trainer(_trained()).save_dir(model)
    for args in (
        ["train", str(path), "--headless", "--workers", "1", "--out", str(tmp_path / "out"), "--save-counts", str(tmp_path / "c.counts")],
        ["encode", "--model", str(model), "--file", str(path), "--out", str(tmp_path / "ids.bin")],
    ):
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(expected), err
        if not name.endswith("parquet"):
            assert err[0].endswith("bytes decompressed); the file is incomplete")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["model", name])  # no out, no counts, no ids, no temporaries


def test_the_whole_file_trains_and_a_cut_at_a_frame_edge_is_whole(tmp_path, whole):
    """What is refused above is the cut: the files whole, and a zstd file of two frames cut
    between them (a whole frame, as zstd tells nothing more), read."""
    for name, data in whole.items():
        (tmp_path / name).write_bytes(data)
        assert train_bpe(tmp_path / name, 270, [SPECIAL])[1]
    first, second = zstd_compress(GOOD.encode()), zstd_compress(b"more text")
    (tmp_path / "plain.txt").write_text(GOOD + "more text")
    (tmp_path / "two.txt.zst").write_bytes(first + second)
    (tmp_path / "one.txt.zst").write_bytes(first)
    settings = CountSettings()
    assert count_inputs([tmp_path / "two.txt.zst"], settings)[0] == count_inputs([tmp_path / "plain.txt"], settings)[0]
    assert count_inputs([tmp_path / "one.txt.zst"], settings)[0] == train_counts(GOOD)
    (tmp_path / "two.txt.zst").write_bytes(first + second[:-1])
    with pytest.raises(CorpusError, match="two.txt.zst: cut short: its zstd data stops unfinished"):
        count_inputs([tmp_path / "two.txt.zst"], settings)


def train_counts(text: str) -> Counter[bytes]:
    return PreTokenizer("gpt2").count(text)


# -- the training screen --------------------------------------------------------------------------


async def test_the_screen_trains_on_a_named_pipe_and_tells_of_skipped_files(tmp_path, named_pipe):
    """A directory with a link loop, skipped and told in a notice; a named pipe beside it,
    read once by the trainer's process (the encode view then opens on its own sample)."""
    from bpe_tui.app import BpeApp
    from bpe_tui.encode.screen import EncodeScreen
    from bpe_tui.train.screen import TrainScreen
    from engine.train.settings import TrainOptions
    from tests.train_app import wait_until

    d = tmp_path / "d"
    d.mkdir()
    (d / "good.txt").write_text(GOOD)
    _loop(d)
    jsonl = write(tmp_path / "docs.jsonl", DOCS)
    pipe = named_pipe(jsonl.read_bytes())
    options = TrainOptions(300, (SPECIAL,), workers=1, skip_bad_inputs=True)
    assert options.opening_text([str(pipe)]) is None  # nothing read from the pipe before the trainer reads it
    screen = TrainScreen([str(d), str(pipe)], options, label="d and a pipe")
    app = BpeApp(screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.snapshot is not None)
        await wait_until(
            pilot, lambda: any("skipped" in n.message and "d/loop: a symbolic link loop" in n.message for n in app._notifications)
        )
        await pilot.press("f")
        await wait_until(pilot, lambda: screen.snapshot is not None and screen.snapshot.finished)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EncodeScreen))
    assert screen.snapshot.merges_done == len(train_bpe([d / "good.txt", jsonl], 300, [SPECIAL])[1])
