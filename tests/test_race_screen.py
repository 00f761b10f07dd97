"""The race screen driven as a student would: it runs, agrees, measures, stops and leaves."""

from __future__ import annotations

import io
import multiprocessing
import os
import signal

from rich.console import Console

from bpe_tui.race.process import RACER_PROCESS
from bpe_tui.race.screen import RaceScreen
from bpe_tui.race.state import FAILED, FINISHED, STOPPED
from bpe_tui.race.widgets.race_verdict import RaceVerdict
from bpe_tui.race.widgets.racer_progress import RacerProgress
from tests.race_app import CRASHING, DAWDLING, MERGES, SWAPPED, frozen, race_app, race_over
from tests.train_app import at_merge, train_app, wait_until


def text_of(screen, selector) -> str:
    """What a panel shows, as plain text."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(screen.query_one(selector).render())
    return console.export_text()


def racers_alive() -> list[str]:
    prefix = RACER_PROCESS.format("")
    return [p.name for p in multiprocessing.active_children() if p.name.startswith(prefix)]


async def test_runs_to_the_end_agrees_and_states_the_speedup():
    app, screen = race_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await race_over(pilot, screen)
        reference, optimized = screen.race.lanes
        assert reference.state == optimized.state == FINISHED
        assert reference.done == optimized.done == MERGES
        assert reference.merges == optimized.merges
        verdict = text_of(screen, RaceVerdict)
        assert f"✓ all {MERGES} merges agree" in verdict
        assert "final speed-up" in verdict and "×" in verdict
        ratio, fast, slow = screen.race.speedup(0.0)
        assert fast is optimized and ratio > 1  # how much faster is measured, never asserted
        lane = text_of(screen, "#lane-0")
        assert screen.query_one("#lane-0", RacerProgress).border_title.startswith("reference: recounts every pair")
        assert f"merges {MERGES}/{MERGES}" in lane and "100%" in lane and "merging " in lane and "counting " in lane


async def test_a_mismatch_is_shown_loudly_with_the_merge_number_and_both_pairs():
    app, screen = race_app(SWAPPED, frozen)
    async with app.run_test(size=(80, 24)) as pilot:
        await race_over(pilot, screen)
        mismatch = screen.race.mismatch
        assert mismatch is not None and mismatch.index == 5
        reference_pair, swapped_pair = mismatch.pairs
        reference = screen.race.lanes[0].merges
        assert (reference_pair, swapped_pair) == (reference[4], reference[5])
        verdict = screen.query_one(RaceVerdict)
        assert verdict.has_class("-mismatch") and verdict.border_title == "✗ THE MERGES DIFFER"
        shown = text_of(screen, RaceVerdict)
        assert "✗ MISMATCH at merge 5: reference merged" in shown and "optimized merged" in shown
        assert not screen.race.agreed


async def test_stop_the_slow_one_keeps_the_speedup_measured_so_far():
    app, screen = race_app(DAWDLING, frozen)
    async with app.run_test(size=(80, 24)) as pilot:
        reference, optimized = screen.race.lanes
        await wait_until(pilot, lambda: optimized.state == FINISHED and reference.done >= 3)
        assert "speed-up so far" in text_of(screen, RaceVerdict)
        await pilot.press("s")
        assert reference.state == STOPPED
        await wait_until(pilot, lambda: not racers_alive())
        stopped_at = reference.done
        assert stopped_at < MERGES
        await pilot.pause(0.3)
        assert reference.done == stopped_at and reference.state == STOPPED  # its process is gone, not just hidden
        verdict = text_of(screen, RaceVerdict)
        assert "speed-up so far" in verdict and ", stopped" in verdict and f"✓ {stopped_at} merges agree so far" in verdict
        assert f"merges {stopped_at}/{MERGES}" in text_of(screen, "#lane-0") and "all would take ~" in text_of(screen, "#lane-0")
        assert screen.check_action("stop", ()) is None  # nothing left to stop: the key dims


async def test_a_racer_that_crashes_ends_the_app_with_status_1():
    app, screen = race_app(CRASHING)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.return_code is not None, limit=60)
    assert app.return_code == 1


async def test_quit_while_racing_ends_both_processes():
    app, screen = race_app(DAWDLING)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.race.lanes[0].done >= 1)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    for process in multiprocessing.active_children():
        process.join(5)
    assert not racers_alive()


async def test_from_the_palette_over_the_training_screen_and_back():
    app, train = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, train, 0)
        titles = [c.title for c in app.get_system_commands(train)]
        assert "Race: recount vs optimized" in titles
        app.action_race()
        await pilot.pause()
        race = app.screen
        assert isinstance(race, RaceScreen) and race.inputs == train.inputs and race.options == train.options
        assert "Race: recount vs optimized" not in [c.title for c in app.get_system_commands(race)]
        await pilot.press("s")  # the race stops (so this test stays short) ...
        await race_over(pilot, race)
        await pilot.press("q")  # ... and q goes back to the training screen
        await pilot.pause()
        assert app.screen is train


async def test_a_racer_that_dies_is_reported_in_its_lane():
    app, screen = race_app(DAWDLING, frozen)
    async with app.run_test(size=(80, 24)) as pilot:
        reference = screen.race.lanes[0]
        await wait_until(pilot, lambda: reference.done >= 1)
        (process,) = [p for p in multiprocessing.active_children() if p.name == RACER_PROCESS.format("reference")]
        os.kill(process.pid, signal.SIGKILL)  # as the out-of-memory killer would
        await wait_until(pilot, lambda: reference.state == FAILED)
        assert "failed  its process died (killed by SIGKILL)" in text_of(screen, "#lane-0")
        assert screen.query_one("#lane-0", RacerProgress).border_subtitle == "✗ failed"
