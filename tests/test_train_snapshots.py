"""SVG snapshots of the training screen at 80x24 and 160x48 on the bundled sample.

Deterministic: fixed merges, the trainer idle before the picture is taken.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from bpe_tui.common.prompt import ConfirmScreen
from tests.train_app import after, train_app, wait_until


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_start(snap_compare, size):
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=after(merge=0))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_after_three_merges(snap_compare, size):
    """`` the`` has just formed: ``␣|t|h|e`` → ``␣the``, with the pair counts it moved."""
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=after("n", "n", "n", merge=3))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_tie_and_partial_utf8(snap_compare, size):
    """Merge 40 joins two bytes of a Chinese character and wins a three-way tie."""
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=after("g", "4", "0", "enter", merge=40))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_asks_before_replacing(snap_compare, size, tmp_path, monkeypatch):
    """``s`` into a directory already holding a tokenizer: the question names the files."""
    monkeypatch.chdir(tmp_path)  # the question names the directory as given: "saved"
    Path("saved").mkdir()
    for name in ("tokenizer.json", "merges.txt"):
        Path("saved", name).write_text("", encoding="utf-8")
    app, _ = train_app(out="saved")

    async def run_before(pilot: Pilot) -> None:
        await after("n", "n", "n", merge=3)(pilot)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))

    assert snap_compare(app, terminal_size=size, run_before=run_before)
