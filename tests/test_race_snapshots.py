"""SVG snapshots of the race at 80x24 and 200x50 on the bundled sample.

Deterministic: the racers' clocks tick a fixed step per reading (``Ticks``) and the screen's
clock is frozen, so every time, rate and speed-up on screen follows from the merges alone.
"""

from __future__ import annotations

import pytest

from bpe_tui.race.state import FINISHED
from tests.race_app import HALT, HALTING, SWAPPED, TICKING, frozen, race_app, race_over
from tests.train_app import wait_until

SIZES = pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])


def until_over():
    async def run_before(pilot) -> None:
        await race_over(pilot, pilot.app.screen)

    return run_before


@SIZES
def test_finished(snap_compare, size):
    """Both done: every merge agrees, the final speed-up (400× by the ticking clocks)."""
    app, _ = race_app(TICKING, frozen)
    assert snap_compare(app, terminal_size=size, run_before=until_over())


@SIZES
def test_fast_one_finished(snap_compare, size):
    """The optimized racer is done, the reference at merge 50 of 143 with its projected time."""
    app, screen = race_app(HALTING, frozen)

    async def run_before(pilot) -> None:
        reference, optimized = screen.race.lanes
        await wait_until(pilot, lambda: optimized.state == FINISHED and reference.done == HALT)
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@SIZES
def test_mismatch(snap_compare, size):
    """A racer with merges 5 and 6 swapped: the verdict turns red and names both pairs."""
    app, _ = race_app(SWAPPED, frozen)
    assert snap_compare(app, terminal_size=size, run_before=until_over())
