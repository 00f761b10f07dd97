"""Counts kept on disk as they are counted (``engine.corpus.runs``): spilled past a memory
budget they give the same table, digest and merges as counting in memory, with one counter
or two; a count killed in the middle and asked again reads only the shards it had not
finished, and saves the same counts and trains the same merges; runs left by a stop
mid-shard, by other files or other settings are not taken."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from engine import Trainer
from engine.corpus import runs
from engine.corpus.counting import TALLY_OVERHEAD, count_parts, count_table
from engine.corpus.runs import Keeping, RunKeeper, kept_runs, plan_digest, write_run
from engine.corpus.shards import CountSettings, PretokenTally, count_shard, plan_shards
from engine.corpus.sources import find_inputs
from tests.conftest import CLI_ENV, ROOT, fixture_file

SETTINGS = CountSettings("gpt2", ("<|endoftext|>",))
INPUTS = [str(fixture_file(name)) for name in ("en-mix-192k.txt", "zh-xiyouji-128k.txt", "tinystories_sample.txt", "corpus.en")]
BUDGET = TALLY_OVERHEAD + (96 << 10)
"""``max_memory`` that leaves one counter a 96 KB tally: it spills many times."""


@pytest.fixture
def scratch(tmp_path_factory, monkeypatch) -> Path:
    """The temporary folder the counts make their runs in, this test's own: a count running
    beside it (another test's, another program's) leaves nothing there."""
    folder = tmp_path_factory.mktemp("scratch")
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.parametrize("workers", [1, 2])
def test_spilled_counts_are_the_counts_in_memory(tmp_path, scratch, workers):
    plain, summary = count_table(INPUTS, SETTINGS, workers=1, shard_bytes=64 << 10)
    spilled, spilled_summary = count_table(INPUTS, SETTINGS, workers=workers, max_memory=workers * BUDGET, shard_bytes=64 << 10)
    assert list(spilled.items()) == sorted(plain.items())
    assert spilled_summary.digest == summary.digest and spilled_summary.bytes_read == summary.bytes_read
    assert not list(scratch.glob("bpe-tui-counts-*/*.run"))  # the temporary runs are gone
    kept, _ = count_table(INPUTS, SETTINGS, workers=workers, max_memory=workers * BUDGET, shard_bytes=64 << 10, keep=tmp_path)
    assert list(kept.items()) == list(spilled.items()) and len(list(tmp_path.glob("*.run"))) > 2 * workers  # it did spill
    merges = []
    for table in (spilled, plain):
        trainer = Trainer(table, 700, ["<|endoftext|>"])
        trainer.run()
        merges.append(trainer.merges)
    assert merges[0] == merges[1] and len(merges[0]) == 700 - 257


@pytest.mark.parametrize("workers", [1, 2])
def test_spilled_counts_read_in_parts_are_the_counts_in_memory(monkeypatch, scratch, workers):
    """The runs joined a part at a time as they are read, their pages let go: the table in
    memory, in order; a trainer laid out from the parts trains its merges; the runs go
    once the parts are read."""
    monkeypatch.setattr(runs, "PART_BYTES", 1500)
    plain, summary = count_table(INPUTS, SETTINGS, workers=1, shard_bytes=64 << 10)
    parts, parts_summary = count_parts(INPUTS, SETTINGS, workers=workers, max_memory=workers * BUDGET, shard_bytes=64 << 10)
    assert parts_summary.digest == summary.digest
    read = list(parts)
    assert len(read) > 10 and max(len(part.words) for part in read) <= 1500
    assert [item for part in read for item in part.items()] == sorted(plain.items())
    assert not list(scratch.glob("bpe-tui-counts-*"))
    bounded = Trainer.from_files(INPUTS, 600, ["<|endoftext|>"], workers=workers, max_memory=workers * BUDGET)
    bounded.run()
    trainer = Trainer(plain, 600, ["<|endoftext|>"])
    trainer.run()
    assert bounded.merges == trainer.merges


def test_a_run_holding_part_of_a_shard_no_run_finished_goes(tmp_path):
    """Spilled mid-shard and stopped before the shard's end: those runs are deleted, and the
    shards finished with them; a run of another plan is deleted too."""
    shards = plan_shards(find_inputs(INPUTS[:2]).sources, SETTINGS, 64 << 10)
    keeping = Keeping(str(tmp_path), plan_digest(shards, SETTINGS), budget=24 << 10)
    tally = PretokenTally(SETTINGS.pretokenizer)
    keeper = RunKeeper(keeping, tally)
    for i in (0, 1):
        keeper.started(i)
        keeper.finished(i, count_shard(shards[i], SETTINGS, None, tally))
    keeper.started(2)
    count_shard(shards[2], SETTINGS, None, tally)  # killed before it was said to be finished
    written = sorted(tmp_path.glob("*.run"))
    assert len(written) >= 2
    write_run(Keeping(str(tmp_path), "another plan"), PretokenTally(SETTINGS.pretokenizer), {}, None)
    with ExitStack() as stack:
        runs = kept_runs(tmp_path, keeping.plan, stack)
        assert all(run.partial is None or run.partial in {0, 1} for run in runs)
        assert {i for run in runs for i in run.done} <= {0, 1}
    assert sorted(tmp_path.glob("*.run")) == sorted(run.path for run in runs)


def test_a_count_killed_in_the_middle_goes_on_where_it_stopped(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = b"".join(fixture_file(name).read_bytes() for name in ("en-mix-192k.txt", "zh-xiyouji-128k.txt"))
    for n in range(60):  # 60 files of 1.3 MB, each a shard, each a little different
        (corpus / f"part-{n:02d}.txt").write_bytes(text * 4 + f" file {n}\n".encode())
    command = [sys.executable, "-m", "bpe_tui.cli", "train", str(corpus), "--vocab-size", "600", "--headless", "--workers", "1"]
    env = {**CLI_ENV, "BPE_TUI_CHECKPOINT_SECONDS": "0"}

    def train(name: str) -> subprocess.Popen[str]:
        args = [*command, "--save-counts", str(tmp_path / f"{name}.counts"), "--out", str(tmp_path / name)]
        return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    stopped = train("stopped")
    parts = tmp_path / "stopped.counts.parts"
    deadline = time.monotonic() + 120
    while len(list(parts.glob("*.run"))) < 5 and stopped.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(stopped.pid, signal.SIGKILL)
    stopped.communicate()
    kept = len(list(parts.glob("*.run")))
    assert 5 <= kept < 60 and not (tmp_path / "stopped.counts").exists()
    again = train("stopped")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    resumed = next(line for line in out.splitlines() if line.startswith("resumed"))
    assert int(resumed.split()[1]) >= kept - 1  # each run finished a shard (the last may have been cut short)
    assert not parts.exists()
    whole = train("whole")
    assert whole.communicate(timeout=300) and whole.returncode == 0
    assert (tmp_path / "stopped.counts").read_bytes() == (tmp_path / "whole.counts").read_bytes()
    assert (tmp_path / "stopped" / "merges.txt").read_bytes() == (tmp_path / "whole" / "merges.txt").read_bytes()
