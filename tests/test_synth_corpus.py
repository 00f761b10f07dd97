"""``benchmarks/synth_corpus.py``, the corpus of the scale runs, made from the test excerpts:
the same seed gives the same bytes, whether the shards are made together by worker processes
or one alone, and the stream is the shards' documents in order."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, fixture_file

pytest.importorskip("numpy")
zstd = pytest.importorskip("backports.zstd")

SCRIPT = ROOT / "benchmarks" / "synth_corpus.py"
SOURCES = [str(fixture_file("en-mix-192k.txt")), str(fixture_file("zh-xiyouji-128k.txt"))]


def make(*args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run([sys.executable, str(SCRIPT), "--sources", *SOURCES, *args], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return done


def texts(path) -> list[str]:
    with zstd.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def test_shards_are_the_same_made_together_or_alone_and_the_stream_is_their_text(tmp_path):
    make("--gb", "0.0015", "--shard-mb", "0.5", "--seed", "7", "--workers", "2", "--out", str(tmp_path / "a"))
    make("--gb", "0.0015", "--shard-mb", "0.5", "--seed", "7", "--workers", "1", "--out", str(tmp_path / "b"))
    shards = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert shards == ["shard-00000.jsonl.zst", "shard-00001.jsonl.zst", "shard-00002.jsonl.zst"]
    for name in shards:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    documents = [doc for name in shards for doc in texts(tmp_path / "a" / name)]
    size = sum(len(doc.encode()) for doc in documents)
    assert 1_500_000 <= size < 1_500_000 + 3 * 40_000  # each shard ends with the document that fills it
    assert any("\u5b59" <= c <= "\u9fff" for doc in documents for c in doc)  # some Chinese
    assert any("def " in doc or "return " in doc for doc in documents)  # some code
    streamed = make("--gb", "0.0015", "--shard-mb", "0.5", "--seed", "7", "--stdout").stdout
    assert streamed == "".join(doc + "\n\n" for doc in documents).encode()
    other = make("--gb", "0.0015", "--shard-mb", "0.5", "--seed", "8", "--stdout").stdout
    assert other != streamed
