"""Shared fixtures: the committed test data in tests/fixtures, the CLI runner, the reference merges."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import settings

from engine.formats.byte_unicode import token_string_to_bytes

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["tests.compare_models", "tests.snapshots_xdist"]
"""Fixtures offered to every test: ``models`` (Hugging Face model files) for the compare tests;
and the snapshot report of a run in pytest-xdist's workers."""
FIXTURES = Path(__file__).resolve().parent / "fixtures"
"""Test data committed with the tests (see its README.md): a clone alone runs every test."""

settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")
"""No property test has a deadline: Hypothesis's default (200 ms an example) is a timing
assert, and on a shared machine running a test per core an example may take longer."""


@pytest.fixture(scope="session", autouse=True)
def threads_on_small_inputs() -> Iterator[None]:
    """Threads for any batch or stream, however small: the tests' inputs are small, and the
    threaded paths must run on them (below ``THREADED_BYTES`` of UTF-8, or
    ``STREAM_THREADED_UNITS`` units, one thread encodes them). Session-wide, as Hypothesis's
    tests take no function-scoped fixture; a test of those limits sets them itself."""
    from engine.encode import tokenizer

    kept = tokenizer.THREADED_BYTES, tokenizer.STREAM_THREADED_UNITS
    tokenizer.THREADED_BYTES, tokenizer.STREAM_THREADED_UNITS = 0, 2
    yield
    tokenizer.THREADED_BYTES, tokenizer.STREAM_THREADED_UNITS = kept


def zstd_module() -> ModuleType | None:
    """Python's zstd (3.14 on) or its backport, as bpe-tui reads .zst with; None without either."""
    for name in ("compression.zstd", "backports.zstd"):
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    return None


def zstd_compress(data: bytes) -> bytes:
    """``data`` as a zstd frame, or skip the test when zstd cannot be read here either."""
    module = zstd_module()
    if module is None:
        pytest.skip("zstd is not installed (bpe-tui[zstd])")
    compressed: bytes = module.compress(data)
    return compressed


def fixture_file(name: str) -> Path:
    """A file in tests/fixtures. It is part of the repository, so a missing one is an error, never a skip."""
    path = FIXTURES / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: tests/fixtures is part of the repository (see its README.md)")
    return path


CLI_ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"} | {k: os.environ[k] for k in ("SYSTEMROOT",) if k in os.environ}
"""A bare environment; Python on Windows cannot start without SYSTEMROOT."""


def run_cli(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``bpe-tui ARGS`` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "bpe_tui.cli", *args],
        cwd=cwd,
        env=CLI_ENV,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )


def assert_changes_account_for(before: dict[Any, int], record: Any, after: dict[Any, int]) -> None:
    """A merge's reported count changes turn the pair counts ``before`` it into those ``after``
    it: each change starts from the count it says, and the merged pair is gone."""
    expected = dict(before)
    del expected[record.pair]
    for change in record.changes:
        assert expected.get(change.pair, 0) == change.before
        expected[change.pair] = change.after
    assert {p: c for p, c in expected.items() if c} == after


def refused(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Assert the one-line refusal; its text."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("bpe-tui: "), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    for part in expected:
        assert part in lines[0]
    return lines[0]


@pytest.fixture(scope="session")
def reference_merges() -> list[tuple[bytes, bytes]]:
    path = fixture_file("train-bpe-reference-merges.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [tuple(token_string_to_bytes(x) for x in line.split(" ")) for line in lines if line]  # type: ignore[misc]


@pytest.fixture(scope="session")
def reference_vocab() -> set[bytes]:
    path = fixture_file("train-bpe-reference-vocab.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k.encode() if k == "<|endoftext|>" else token_string_to_bytes(k) for k in data}
