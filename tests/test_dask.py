"""Counting on a Dask cluster: the same counts, digest and merges as one process or local
workers, on process and thread clusters; a worker that dies is retried; a cluster that
cannot be reached, or a missing extra, is one line."""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from engine import CorpusError, SettingsError, train_bpe
from engine.corpus.counting import count_inputs
from engine.corpus.dask_count import check_target, count_on_dask
from engine.corpus.shards import CountSettings, PretokenTally, Shard, ShardCount, count_shard, plan_shards
from engine.corpus.sources import expand_inputs
from tests.conftest import CLI_ENV, ROOT, refused, run_cli, zstd_module
from tests.test_inputs import DOCS, SPECIAL, write

pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use")  # the clusters' status pages
needs_dask = pytest.mark.skipif(find_spec("dask") is None or find_spec("distributed") is None, reason="the dask extra is not installed")
SETTINGS = CountSettings("gpt2", (SPECIAL,), skip_bad_records=True, block_bytes=1024)
SHARD_BYTES = 2048
"""Small shards: dozens of tasks even for these small files, so the tree has several levels."""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A directory of every format, with bad JSONL records to skip."""
    root = tmp_path_factory.mktemp("corpus")
    long_docs = [f"{d} {i}" for i, d in enumerate(DOCS * 40)]  # varied, so shards differ
    write(root / "a.txt", long_docs)
    write(root / "b.jsonl", long_docs[:300])
    write(root / "c.jsonl.gz", long_docs[300:])
    with open(root / "b.jsonl", "a", encoding="utf-8") as f:
        f.write('{"text": 1}\nnot json\n{"title": "no text"}\n')
    for optional_name in ("d.txt.zst", "e.parquet"):
        if zstd_module() if optional_name.endswith("zst") else find_spec("pyarrow"):
            write(root / optional_name, DOCS)
    return root


@pytest.fixture(scope="module")
def alone(corpus):
    """The counts and summary of one process: what every cluster must give."""
    return count_inputs([corpus], SETTINGS, workers=1, shard_bytes=SHARD_BYTES)


@pytest.fixture(scope="module")
def process_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture(scope="module", params=["processes", "threads"])
def client(request):
    distributed = pytest.importorskip("distributed")
    if request.param == "processes":
        with distributed.Client(request.getfixturevalue("process_cluster"), set_as_default=False) as c:
            yield c
        return
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        yield c


@needs_dask
def test_a_cluster_counts_like_one_process_and_local_workers(corpus, alone, client, monkeypatch):
    counts, summary = alone
    assert summary.bad_records == 3 and len(plan_shards(expand_inputs([corpus]), SETTINGS, SHARD_BYTES)) > 16
    seen: list[tuple[int, int]] = []
    on_cluster = count_inputs([corpus], SETTINGS, shard_bytes=SHARD_BYTES, dask=client, progress=lambda _, d, t: seen.append((d, t)))
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)  # local workers even for small files
    local_workers = count_inputs([corpus], SETTINGS, workers=2, shard_bytes=SHARD_BYTES)
    assert on_cluster == (counts, summary) == local_workers  # the digest and bad records included
    # Progress: bytes across the cluster, a shard at a time, ending at the total.
    total = sum(size for _, size in summary.inputs)
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:], strict=False))


@needs_dask
def test_merges_trained_on_a_cluster_are_those_of_one_process(corpus, client):
    options = {"text_field": "text", "skip_bad_records": True}
    assert train_bpe(corpus, 400, [SPECIAL], dask=client, **options) == train_bpe(corpus, 400, [SPECIAL], workers=1, **options)


@needs_dask
def test_a_scheduler_address_is_reached_over_tcp(corpus, alone, process_cluster):
    address = process_cluster.scheduler_address
    assert address.startswith("tcp://127.0.0.1:")
    assert count_inputs([corpus], SETTINGS, shard_bytes=SHARD_BYTES, dask=address) == alone


def dies_once(shard: Shard, settings: CountSettings, progress: None, tally: PretokenTally, marker: str) -> ShardCount:
    """Count the shard, but the first task to get here kills its worker process."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return count_shard(shard, settings, progress, tally)
    os._exit(1)


@needs_dask
def test_a_worker_that_dies_is_replaced_and_its_task_rerun(corpus, alone, process_cluster, tmp_path):
    distributed = pytest.importorskip("distributed")
    marker = tmp_path / "died"
    shards = plan_shards(expand_inputs([corpus]), SETTINGS, SHARD_BYTES)
    with distributed.Client(process_cluster, set_as_default=False) as c:
        counts, results = count_on_dask(shards, SETTINGS, c, lambda n: None, "corpus", functools.partial(dies_once, marker=str(marker)))
    assert marker.exists()  # a worker did die
    assert counts.counter() == alone[0]
    assert [r.digest for r in results] == [count_shard(s, SETTINGS).digest for s in shards]


def waits_to_be_seen(shard: Shard, settings: CountSettings, progress: None, tally: PretokenTally, begun: str, seen: str) -> ShardCount:
    """Count the shard once the client has been told of every shard this worker counted
    before it: were progress told only as tasks end, a task's second shard would wait in vain."""
    before = os.path.getsize(begun)
    deadline = time.monotonic() + 30
    while os.path.getsize(seen) < before:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the client heard of {os.path.getsize(seen)} shards, not {before}")
        time.sleep(0.005)
    with open(begun, "ab") as f:
        f.write(b".")
    return count_shard(shard, settings, progress, tally)


@needs_dask
def test_progress_moves_a_shard_at_a_time_while_tasks_run(corpus, alone, tmp_path):
    distributed = pytest.importorskip("distributed")
    begun, seen = tmp_path / "begun", tmp_path / "seen"
    begun.touch()
    seen.touch()
    told: list[int] = []

    def read(n: int) -> None:
        told.append(n)
        with open(seen, "ab") as f:
            f.write(b".")

    shards = plan_shards(expand_inputs([corpus]), SETTINGS, SHARD_BYTES)
    count = functools.partial(waits_to_be_seen, begun=str(begun), seen=str(seen))
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        counts, _ = count_on_dask(shards, SETTINGS, c, read, "corpus", count)  # two tasks of many shards each
    assert sorted(told) == sorted(s.size for s in shards)  # each shard once
    assert counts.counter() == alone[0]
    assert os.path.getsize(begun) == len(shards)


def always_dies(shard: Shard, settings: CountSettings, progress: None, tally: PretokenTally) -> ShardCount:
    os._exit(1)


@needs_dask
def test_workers_that_die_on_every_retry_end_the_run_in_one_line(corpus):
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    shards = plan_shards(expand_inputs([corpus / "a.txt"]), SETTINGS)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        with pytest.raises(CorpusError, match=r"^a\.txt: Dask workers died counting it, again on every retry \(out of memory or killed\)$"):
            count_on_dask(shards, SETTINGS, c, lambda n: None, "a.txt", always_dies)


@needs_dask
def test_bad_input_found_on_a_worker_is_one_line_naming_the_file(tmp_path, client):
    write(tmp_path / "bad.jsonl", DOCS[:3])
    with open(tmp_path / "bad.jsonl", "a", encoding="utf-8") as f:
        f.write("not json\n")
    with pytest.raises(CorpusError, match=r"bad\.jsonl: line 4: not valid JSON"):
        count_inputs([tmp_path / "bad.jsonl"], CountSettings(), dask=client)


@needs_dask
def test_train_dask_local_writes_the_tokenizer_of_one_process(corpus, tmp_path):
    args = [str(corpus), "--headless", "--vocab-size", "400", "--skip-bad-records"]
    on_cluster = run_cli("train", *args, "--dask", "local:2", "--out", str(tmp_path / "dask"))
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert "Traceback" not in on_cluster.stderr
    alone = run_cli("train", *args, "--workers", "1", "--out", str(tmp_path / "alone"))
    assert alone.returncode == 0, alone.stderr
    for name in ("tokenizer.json", "merges.txt"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes()
    digest = next(line for line in alone.stdout.splitlines() if "digest" in line)
    assert digest in on_cluster.stdout


@needs_dask
def test_a_cluster_that_cannot_be_reached_is_one_line(corpus):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, never listening: nothing answers there, and no other process takes the port meanwhile
        port = s.getsockname()[1]
        done = run_cli("train", str(corpus / "a.txt"), "--headless", "--dask", f"tcp://127.0.0.1:{port}")
    refused(done, f"--dask tcp://127.0.0.1:{port}: cannot reach the Dask scheduler")


def test_without_the_extra_dask_is_refused_naming_it(corpus):
    blocked = "import sys; sys.modules['dask'] = sys.modules['distributed'] = None; from bpe_tui.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", blocked, "train", str(corpus / "a.txt"), "--headless", "--dask", "local:2"],
        cwd=ROOT,
        env=CLI_ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    refused(done, "--dask local:2 needs dask: pip install 'bpe-tui[dask]'")


@pytest.mark.parametrize("spec", ["local:0", "local:x", "lokal", "", "tcp://", "tcp://host"])
def test_a_dask_value_that_cannot_work_is_refused_before_anything_starts(spec):
    with pytest.raises(SettingsError, match="use local, local:N with N >= 1 workers, or a scheduler address"):
        check_target(spec)


@pytest.mark.parametrize(
    ("extra", "message"), [(["--counts", "c.counts"], "does not go with --counts"), (["--workers", "2"], "with --dask the cluster counts")]
)
def test_dask_with_options_it_cannot_go_with_is_refused(corpus, extra, message):
    refused(run_cli("train", "--headless", "--dask", "local:2", *extra), message)


def test_the_engine_imports_dask_only_when_a_cluster_is_asked_for():
    code = (
        "import sys, engine, engine.corpus.counting, engine.train.trainer, engine.corpus.dask_count; "
        "print(sorted({'dask', 'distributed'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=CLI_ENV, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
