"""``bpe-tui race``: the recount-everything trainer against the optimized one, on one corpus.

Without a FILE it races on the bundled sample. The screen shows both side by side; with
``--headless`` a progress line each second, then the results. Exit status 0 when every
merge agreed, 1 when the merges differ, 130 when interrupted (the results so far printed).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from rich.console import Console, Group
from rich.table import Table

from bpe_tui.common.child_process import listen
from bpe_tui.common.corpus import chosen_corpus, options_from_args
from bpe_tui.common.durations import show_seconds
from bpe_tui.race.process import RACERS, follow, start_racers
from bpe_tui.race.state import FINISHED, MERGING, Lane, Race, Racer, show_rate, show_speedup
from engine import SettingsError
from engine.corpus.sources import expand_inputs
from engine.train.settings import TrainOptions


def run_race(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    if args.inputs and any(s.stream for s in expand_inputs(args.inputs, options.skip_bad_inputs, options.stdin_format)):
        raise SettingsError("the race reads its corpus once for each racer, and a stream (- or a named pipe) can be read once: give a file")
    with chosen_corpus(args.inputs, options) as (inputs, label):
        if args.headless:
            return run_headless(inputs, label, options)
        from bpe_tui.app import BpeApp
        from bpe_tui.race.screen import RaceScreen

        app = BpeApp(RaceScreen(inputs, options, label))
        app.run()
        if app.failure is not None:
            raise app.failure
        return app.return_code or 0


def run_headless(inputs: Sequence[str], label: str, options: TrainOptions, racers: tuple[Racer, Racer] = RACERS) -> int:
    """Race, printing a line each second and the results; the exit status."""
    console = Console(highlight=False, soft_wrap=True)
    planned = options.merges_planned
    assert planned is not None  # the race is byte-level: classic BPE never races
    state = Race(racers, planned)
    children = start_racers(racers, inputs, options)
    clock = time.perf_counter
    printed = started = clock()
    try:
        for item in listen(children, lambda: False):
            now = clock()
            if item is not None and follow(state, children, *item, now):
                console.print(f"race on {label}, {options.merges_planned:,} merges (vocab {options.vocab_size:,}): {_counted(state)}")
            if now - printed >= 1.0:
                printed = now
                console.print(_progress_line(state, now - started, now))
    except BaseException as e:  # bad input, a racer's crash, or Ctrl-C: end both racers first
        now = clock()
        for i, child in enumerate(children):
            child.close(terminate=True)
            state.stop(i, now)
        if not isinstance(e, KeyboardInterrupt):
            raise
        console.print(_results(state, now))
        console.print("interrupted", style="bold")
        return 130
    for i, child in enumerate(children):
        child.close()
        if state.lanes[i].state != FINISHED:
            state.fail(i, f"its process died ({child.death() or 'ended early'})")
    console.print(_results(state, clock()))
    return 0 if state.agreed else 1


def _counted(state: Race) -> str:
    counting = ", ".join(f"{lane.racer.name} {show_seconds(lane.counting)}" for lane in state.lanes)
    return f"counted {state.distinct_pre_tokens:,} distinct pre-tokens ({counting}; not part of the race), go"


def _progress_line(state: Race, wall: float, now: float) -> str:
    lanes = "  |  ".join(_lane_progress(lane, now) for lane in state.lanes)
    return f"{wall:6.1f} s  {lanes}  |  {_agreement(state)}"


def _lane_progress(lane: Lane, now: float) -> str:
    where = f"{lane.racer.name} {lane.done:,}/{lane.total:,}"
    if lane.state != MERGING:
        return f"{where} {lane.state}"
    return f"{where} {show_rate(lane.rate(now))}, {show_seconds(lane.to_finish(now))} to go"


def _agreement(state: Race) -> str:
    if state.mismatch is not None:
        m = state.mismatch
        a, b = (" + ".join(repr(t) for t in pair) if pair else "no merge" for pair in m.pairs)
        names = [lane.racer.name for lane in state.lanes]
        return f"MISMATCH at merge {m.index}: {names[0]} {a}, {names[1]} {b}"
    if state.agreed:
        return f"all {state.compared:,} merges agree"
    return f"{state.compared:,} merges agree so far"


def _results(state: Race, now: float) -> Group:
    table = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
    table.add_column("")
    for lane in state.lanes:
        table.add_column(lane.racer.name, justify="right")
    rows = {
        "merges": [f"{lane.done:,}/{lane.total:,}" + ("" if lane.state == FINISHED else f" ({lane.state})") for lane in state.lanes],
        "counting": [show_seconds(lane.counting) for lane in state.lanes],
        "merging": [show_seconds(lane.elapsed(now)) for lane in state.lanes],
        "merges/s": [show_rate(lane.rate(now)) for lane in state.lanes],
    }
    for name, cells in rows.items():
        table.add_row(name, *cells)
    lines = [f"agreement: {_agreement(state)}"]
    speedup = state.speedup(now)
    if speedup is not None:
        ratio, fast, slow = speedup
        final = "" if all(lane.state == FINISHED for lane in state.lanes) else " so far"
        lines.append(f"speed-up: {fast.racer.name} merges {show_speedup(ratio)} faster than {slow.racer.name}{final}")
    return Group(table, *lines)
