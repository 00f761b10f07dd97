"""SVG snapshots of the training screen at 80x24 and 160x48 on the bundled sample.

Deterministic: fixed merges, the trainer idle before the picture is taken.
"""

from __future__ import annotations

import pytest

from tests.train_app import after, train_app


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
