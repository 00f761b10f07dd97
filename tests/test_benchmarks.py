"""The benchmarks are not run here (speed is measured on a quiet machine, not asserted), but
each must still start: ``--help`` imports everything it uses from the engine, so a name
moved or renamed there fails here rather than in the next measurement."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

TOOLS = ("shapes.py", "synth_corpus.py")
"""Scripts that make corpora for the benchmarks."""
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if p.name.startswith("bench_") or p.name in TOOLS)


def test_every_benchmark_is_listed():
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_starts(script):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
