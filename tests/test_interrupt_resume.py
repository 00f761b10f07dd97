"""Interrupted training keeps its work, resuming finishes it exactly, and dying processes
end the run with a message instead of a hang."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pty
import re
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bpe_tui.cli import main
from bpe_tui.common.corpus import sample_corpus
from bpe_tui.train.screen import TRAINER_PROCESS
from engine import ResumeError, Tokenizer, Trainer
from engine.formats.tokenizer_files import MERGES_TXT, TOKENIZER_JSON, VOCAB_JSON
from engine.train.trainer import RUN_SLICE
from tests.conftest import CLI_ENV as ENV
from tests.conftest import fixture_file, run_cli
from tests.train_app import at_merge, train_app, wait_until

FILES = (TOKENIZER_JSON, VOCAB_JSON, MERGES_TXT)
BIG_VOCAB = "40000"
SIGNAL_AT = 1000
"""The merge after which the interrupted runs get their signal."""
VOCAB = 1000


def same_files(a: Path, b: Path) -> bool:
    return all((a / name).read_bytes() == (b / name).read_bytes() for name in FILES)


@pytest.fixture(scope="module")
def big_corpus() -> Path:
    return fixture_file("en-mix-192k.txt")


@pytest.fixture(scope="module")
def uninterrupted(big_corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted")
    done = run_cli("train", str(big_corpus), "--headless", "--vocab-size", BIG_VOCAB, "--out", str(out), cwd=out)
    assert done.returncode == 0, done.stderr
    return out


def interrupt_while_merging(args: list[str], cwd: Path, signum: int) -> tuple[int, str]:
    """Run ``bpe-tui`` with stderr on a terminal (so it draws progress bars) and have it get
    ``signum`` right after merge ``SIGNAL_AT``, as a user's Ctrl-C or ``kill`` would; return
    the exit status and everything on stderr."""
    script = textwrap.dedent(
        f"""
        import os, sys
        from engine.train.trainer import Trainer
        from bpe_tui.cli import main

        record = Trainer._record

        def record_then_signal(self, a, b, count):
            record(self, a, b, count)
            if len(self.merge_pairs) == {SIGNAL_AT}:
                os.kill(os.getpid(), {int(signum)})

        Trainer._record = record_then_signal
        sys.exit(main({args!r}))
        """
    )
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=ENV | {"TERM": "xterm"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            assert ready, "no output from bpe-tui"
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # the terminal closes with the process
                break
            if not chunk:
                break
            seen += chunk
        return proc.wait(timeout=120), seen.decode(errors="replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_saves_a_prefix_and_resume_finishes_it_exactly(tmp_path, big_corpus, uninterrupted, signum):
    out = tmp_path / "run"
    args = ["train", str(big_corpus), "--headless", "--vocab-size", BIG_VOCAB, "--out", str(out)]
    status, stderr = interrupt_while_merging(args, tmp_path, signum)
    assert status == 130, stderr
    assert re.search(rf"interrupted at merge [\d,]+ of [\d,]+: saved to {out}; continue with --resume {out}", stderr)
    assert "Traceback" not in stderr
    assert not list(out.glob(".*.tmp"))  # the atomic writes left no temporary files

    partial, full = Tokenizer.load(out).merges, Tokenizer.load(uninterrupted).merges
    assert 0 < len(partial) < len(full) and full[: len(partial)] == partial
    if signum == signal.SIGTERM:
        return
    resumed = run_cli("train", str(big_corpus), "--headless", "--vocab-size", BIG_VOCAB, "--resume", str(out), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert same_files(out, uninterrupted)


def test_interrupted_while_pre_tokenizing_saves_nothing(tmp_path, monkeypatch, capsys):
    import engine.train.trainer

    counted = engine.train.trainer.count_parts

    def count_then_interrupt(*args, **kwargs):  # Ctrl-C arrives before the first merge
        counts = counted(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return counts

    monkeypatch.setattr(engine.train.trainer, "count_parts", count_then_interrupt)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when pytest was started in the background
    with sample_corpus() as corpus:
        assert main(["train", str(corpus), "--headless", "--out", str(tmp_path / "out")]) == 130
    assert ": nothing trained, nothing saved" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert signal.getsignal(signal.SIGINT) is before  # handlers restored


def test_interrupted_count_says_the_counts_kept_go_on(tmp_path, monkeypatch, capsys):
    """With --save-counts the runs counted before Ctrl-C stay, and the same command takes them up."""
    import engine.train.trainer

    saved = engine.train.trainer.save_counts_file

    def interrupt_then_save(*args, **kwargs):  # Ctrl-C arrives once the runs are written
        signal.raise_signal(signal.SIGINT)
        return saved(*args, **kwargs)

    monkeypatch.setattr(engine.train.trainer, "save_counts_file", interrupt_then_save)
    counts = tmp_path / "sc.counts"
    with sample_corpus() as corpus:
        command = ["train", str(corpus), "--headless", "--save-counts", str(counts), "--out", str(tmp_path / "out")]
        assert main(command) == 130
        err = capsys.readouterr().err
        assert f"nothing trained; the counts so far are kept in {counts}.parts: run the same command again to go on from them" in err
        monkeypatch.setattr(engine.train.trainer, "save_counts_file", saved)
        assert main(command) == 0
    assert "counted before the stop" in capsys.readouterr().out and counts.exists()


def test_ctrl_c_in_any_command_is_one_line_and_exit_130(tmp_path, monkeypatch, capsys):
    with sample_corpus() as corpus:
        assert main(["train", str(corpus), "--headless", "--vocab-size", "300", "--out", str(tmp_path)]) == 0
    capsys.readouterr()

    class CtrlC:  # stdin of a decode waiting for ids when Ctrl-C is pressed
        def read(self) -> str:
            raise KeyboardInterrupt

    monkeypatch.setattr(sys, "stdin", CtrlC())
    assert main(["decode", "--model", str(tmp_path)]) == 130
    assert capsys.readouterr() == ("", "bpe-tui: interrupted\n")


# -- resume ---------------------------------------------------------------------------------


def test_resume_from_a_smaller_vocabulary_equals_one_run(tmp_path):
    with sample_corpus() as corpus:
        assert main(["train", str(corpus), "--headless", "--vocab-size", "600", "--out", str(tmp_path / "once")]) == 0
        assert main(["train", str(corpus), "--headless", "--vocab-size", "400", "--out", str(tmp_path / "twice")]) == 0
        assert main(["train", str(corpus), "--headless", "--vocab-size", "600", "--resume", str(tmp_path / "twice")]) == 0
    assert same_files(tmp_path / "once", tmp_path / "twice")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["OTHER"], "other.txt gives with these settings (another corpus"),
        (["SAME", "--pattern", "gpt4"], "trained with --pattern gpt2, not gpt4"),
        (["SAME", "--special-token", "<s>"], "trained with special tokens ['<|endoftext|>'], not ['<s>']"),
        (["SAME", "--vocab-size", "270"], "merges already, more than --vocab-size 270 leaves room for"),
    ],
)
def test_resume_with_another_corpus_or_settings_is_refused(tmp_path, capsys, change, message):
    same, other = tmp_path / "same.txt", tmp_path / "other.txt"
    same.write_bytes(b"the cat sat on the mat, the hat on the cat\n" * 20 + b"caf\xe9 caf\xe9 \xe9\xe9\xe9\n")
    other.write_text("a different text with different words in it\n" * 20)
    saved = tmp_path / "saved"
    assert main(["train", str(same), "--headless", "--vocab-size", "287", "--errors", "replace", "--out", str(saved)]) == 0
    before = [(saved / name).read_bytes() for name in FILES]
    corpus = {"SAME": str(same), "OTHER": str(other)}[change[0]]
    args = ["train", corpus, "--headless", "--vocab-size", "300", "--errors", "replace", *change[1:], "--resume", str(saved)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"bpe-tui: {saved}: ") and message in err[-1]
    assert [(saved / name).read_bytes() for name in FILES] == before  # left as it was


def test_replay_checks_every_merge_it_redoes():
    """Redone a slice at a time, the saved merges are still checked one by one: one changed
    past the first slice is found, and the trainer never saves a run it was not given."""
    with sample_corpus() as corpus:
        merges = train_trainer(corpus).merges
        assert len(merges) > 2 * RUN_SLICE
        assert train_trainer(corpus, replay=merges).merges == merges
        changed = [*merges[: RUN_SLICE + 44], (merges[0][1], merges[0][0]), *merges[RUN_SLICE + 45 :]]
        trainer = Trainer.from_file(corpus, VOCAB, ["<|endoftext|>"])
        assert not trainer.replay(changed)
        assert not trainer.replay(merges[:-1] + [(b"zz", b"zz")])


def train_trainer(corpus: Path, replay: list[tuple[bytes, bytes]] | None = None) -> Trainer:
    trainer = Trainer.from_file(corpus, VOCAB, ["<|endoftext|>"])
    if replay is None:
        trainer.run()
    else:
        assert trainer.replay(replay)
    return trainer


def test_interrupted_while_redoing_saved_merges_saves_nothing(tmp_path, monkeypatch, capsys):
    """Ctrl-C before a resumed run is back where the saved one stopped: that run is left as
    it was, and the message says so, not that the corpus is another."""
    with sample_corpus() as corpus:
        saved = tmp_path / "saved"
        assert main(["train", str(corpus), "--headless", "--vocab-size", "700", "--out", str(saved)]) == 0
        before = [(saved / name).read_bytes() for name in FILES]
        capsys.readouterr()
        record = Trainer._record

        def record_then_interrupt(self: Trainer, a: int, b: int, count: int) -> None:
            record(self, a, b, count)
            if len(self.merge_pairs) == 100:
                signal.raise_signal(signal.SIGINT)

        monkeypatch.setattr(Trainer, "_record", record_then_interrupt)
        args = ["train", str(corpus), "--headless", "--vocab-size", "900", "--resume", str(saved), "--out", str(saved)]
        assert main(args) == 130
    assert f"interrupted while redoing the 443 merges saved in {saved}: nothing saved" in capsys.readouterr().err
    assert [(saved / name).read_bytes() for name in FILES] == before


def test_resume_from_nothing(tmp_path, capsys):
    with sample_corpus() as corpus:
        assert main(["train", str(corpus), "--headless", "--resume", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such file" in capsys.readouterr().err


# -- processes that die -------------------------------------------------------------------------


def test_a_counting_worker_that_dies_ends_the_run_with_a_message(tmp_path):
    """A worker killed mid-count (as the out-of-memory killer would) is reported, not waited on."""
    corpus, other = tmp_path / "corpus.txt", tmp_path / "more.txt"
    corpus.write_text("some words to count, and more words\n" * 20_000)
    other.write_text("other words to count\n" * 20_000)
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        import engine.corpus.counting, engine.corpus.shards
        from bpe_tui.cli import main

        parent, added = os.getpid(), engine.corpus.shards.PretokenTally._added

        def die(*args):
            if os.getpid() != parent:  # a worker process; this one counts in a thread too
                os.kill(os.getpid(), signal.SIGKILL)
            added(*args)

        engine.corpus.shards.PretokenTally._added = die  # after whatever was counted, however
        engine.corpus.counting.IN_PROCESS = 0  # small files, counted by workers all the same
        sys.exit(main(["train", {str(corpus)!r}, {str(other)!r}, "--headless", "--workers", "2"]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"bpe-tui: {corpus} and 1 more file: a worker process died while counting pre-tokens (out of memory or killed); try fewer --workers"
    )


async def test_app_reports_a_trainer_process_that_dies():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        for child in multiprocessing.active_children():
            if child.name == TRAINER_PROCESS:  # as the out-of-memory killer would
                child.kill()
        await wait_until(pilot, lambda: app.failure is not None)
    assert app.return_code == 2
    assert "the training process died (killed by SIGKILL: out of memory, or killed)" in str(app.failure)


async def test_app_ends_with_status_1_after_the_trainer_crashes():
    """A bug in the trainer's process: its traceback shown, and a status a script can see."""
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await asyncio.to_thread(screen._report, ("crashed", "Traceback (most recent call last):\nRuntimeError: a bug\n"))
        await wait_until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 1 and app.failure is None


# -- the app ----------------------------------------------------------------------------------


async def test_app_quit_right_after_save_keeps_the_save(tmp_path):
    app, screen = train_app(out=str(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("f")
        await at_merge(pilot, screen, screen.merges_planned)
        await pilot.press("s", "q")
        await wait_until(pilot, lambda: app.return_code is not None)
    assert len(Tokenizer.load(tmp_path).merges) == screen.merges_planned
    assert not list(tmp_path.glob(".*.tmp"))


async def test_app_resumes_a_saved_run(tmp_path):
    with sample_corpus() as corpus:
        assert main(["train", str(corpus), "--headless", "--vocab-size", "300", "--out", str(tmp_path)]) == 0
    merges = Tokenizer.load(tmp_path).merges
    app, screen = train_app(resume=(str(tmp_path), merges))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, len(merges))
        await pilot.press("n")
        await at_merge(pilot, screen, len(merges) + 1)


async def test_app_refuses_to_resume_another_run(tmp_path):
    merges = [(b"z", b"z")]
    app, screen = train_app(resume=(str(tmp_path), merges))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.failure is not None)
    assert isinstance(app.failure, ResumeError) and str(app.failure).startswith(f"{tmp_path}: its merges are not")
