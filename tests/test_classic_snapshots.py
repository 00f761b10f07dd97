"""SVG snapshots of the training screen on classic BPE (the toy corpus) at 80x24 and 160x48."""

from __future__ import annotations

import pytest

from tests.train_app import after, classic_app


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_classic_start(snap_compare, size):
    """Three pairs tied at 9: ``e|s``, seen first (in ``widest``), is on top."""
    app, _ = classic_app()
    assert snap_compare(app, terminal_size=size, run_before=after(merge=0))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_classic_after_three_merges(snap_compare, size):
    """``est</w>`` has formed: ``newest`` reads ``n|e|w|est</w>``."""
    app, _ = classic_app()
    assert snap_compare(app, terminal_size=size, run_before=after("n", "n", "n", merge=3))
