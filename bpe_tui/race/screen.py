"""The race: the recount-everything reference trainer against the optimized one, live.

The lecture's naive trainer took about seven seconds on a 130 KB corpus, and it recounts
every pair before every merge; the optimized one updates only the pairs a merge touches.
Here both count the same corpus with the same settings, each in a process of its own
(``race.process``), then start merging together. Each measures its own time; the screen
shows both lanes, compares their merge lists as they arrive, and states the speed-up once
one finishes. ``s`` stops the racer still running, ``q`` leaves at any time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from bpe_tui.common.child_process import ChildProcess, Report, ensure_running, listen
from bpe_tui.common.navigation import Failed, over_another
from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.race.process import RACERS, follow, start_racers
from bpe_tui.race.state import COUNTING, FINISHED, MERGING, READY, STOPPED, Race, Racer
from bpe_tui.race.widgets.merges_side_by_side import MergesSideBySide
from bpe_tui.race.widgets.race_panel import RacePanel
from bpe_tui.race.widgets.race_verdict import RaceVerdict
from bpe_tui.race.widgets.racer_progress import RacerProgress
from engine import BpeError
from engine.train.settings import TrainOptions

COMPARED = (
    "Raced: merging, from equal pre-token counts to the last merge, each in its own process. "
    "Counting the corpus (the same code for both) is timed apart."
)
TICK = 0.25
"""Seconds between two repaints while a racer merges, besides those its reports bring:
elapsed times go on between reports (a naive merge on a big corpus takes seconds)."""


class RaceScreen(Screen[None]):
    """Two racers on one corpus, side by side, and the verdict."""

    CSS_PATH = "screen.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = [
        Binding("s", "stop", "stop racing", tooltip="Stop the racer still running (the results so far stay)", id="race.stop"),
        Binding("q", "back", "back", tooltip="Stop the race and go back to the screen below", id="race.back"),
        Binding("q", "quit_app", "quit", tooltip="Stop the race and quit bpe-tui", id="race.quit"),
    ]

    SCREEN_HELP = ScreenHelp(
        title="the race",
        intro=(
            "The lecture's first trainer against the optimized one, on the same corpus, each in "
            "a process of its own. The reference recounts every adjacent pair of the whole corpus "
            "before each merge; the optimized trainer keeps pair_counter and pair_positions, and "
            "each merge visits only the positions of the merged pair, updating the counts of its "
            "prev/next neighbours and pushing new pairs on the lazy heap."
        ),
        panels=(
            (
                "race on FILE (the top lines)",
                "The corpus, the merges planned (vocabulary size minus 256 bytes and the special "
                "tokens) and its distinct pre-tokens. Both count the corpus with the same code, "
                "timed apart; what is raced is merging, from the pre-token counts to the last merge.",
            ),
            (
                "the two lanes",
                "One per racer: merges done of total on a bar, merging time, merges per second, the "
                "time left at that rate, and the time spent counting. Each racer times itself in "
                "its own process.",
            ),
            (
                "verdict",
                "Every merge is compared as soon as both have made it: they must agree pair for pair, "
                "in the same order, or the panel turns red with the merge number and both pairs. "
                "Once one racer finishes it shows the speed-up so far (the ratio of merge rates); "
                "once both have, the final one (the ratio of merging times).",
            ),
            (
                "merges side by side",
                "The newest merges of both racers, numbered in the order made, each marked ✓ where they agree and ✗ where they differ.",
            ),
        ),
    )
    """What ``?`` and ``bpe-tui explain race`` say of this screen."""

    class Reported(Message):
        """Racer ``index`` sent ``report``; every one counts (each carries new merges)."""

        def __init__(self, index: int, report: Report) -> None:
            super().__init__()
            self.index, self.report = index, report

    class Ended(Message):
        """Racer ``index``'s process has ended; ``death`` says how if it did not exit cleanly."""

        def __init__(self, index: int, death: str | None) -> None:
            super().__init__()
            self.index, self.death = index, death

    def __init__(
        self,
        inputs: Sequence[str],
        options: TrainOptions,
        label: str | None = None,
        racers: tuple[Racer, Racer] = RACERS,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """``racers`` and ``clock`` (the screen's, which carries elapsed times on between
        reports) are where tests put racers of their own and freeze time."""
        super().__init__()
        ensure_running()  # before the app captures stderr (see child_process)
        self.inputs = list(inputs)
        self.label = label or ", ".join(Path(i).name for i in self.inputs)
        self.options = options
        self.racers = racers
        self.clock = clock
        planned = options.merges_planned
        assert planned is not None  # the race is byte-level: classic BPE never races
        self.race = Race(racers, planned)
        self._children: Sequence[ChildProcess] = ()
        self._over = False

    def compose(self) -> ComposeResult:
        yield Static(id="race-title")
        yield Static(COMPARED, id="race-compared")
        with Horizontal(id="lanes"):
            for i in range(len(self.racers)):
                yield RacerProgress(i, id=f"lane-{i}")
        yield RaceVerdict(id="verdict")
        merges = MergesSideBySide(id="merges")
        merges.border_title = "merges side by side"
        yield merges
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._ticker = self.set_interval(TICK, self._show, pause=True)
        self._show()
        self._run_racers()

    # -- the racers' processes ---------------------------------------------------------------

    @work(thread=True, exclusive=True, group="racers")
    def _run_racers(self) -> None:
        """Start a process per racer and pass their reports on until both have ended."""
        children = self._children = start_racers(self.racers, self.inputs, self.options)
        worker = get_current_worker()
        try:
            for item in listen(children, lambda: worker.is_cancelled):
                if item is not None:
                    self.post_message(self.Reported(*item))
        finally:
            for child in children:
                child.close(terminate=worker.is_cancelled)
        if not worker.is_cancelled:
            for i, child in enumerate(children):
                self.post_message(self.Ended(i, child.death()))

    def on_race_screen_reported(self, message: Reported) -> None:
        try:
            follow(self.race, self._children, message.index, message.report, self.clock())
        except BpeError as e:
            self.post_message(Failed(e))
            return
        except RuntimeError as e:
            self.app.exit(return_code=1, message=str(e))
            return
        if any(lane.state == MERGING for lane in self.race.lanes):
            self._ticker.resume()
        self._show()

    def on_race_screen_ended(self, message: Ended) -> None:
        lane = self.race.lanes[message.index]
        if lane.state in (COUNTING, READY, MERGING):
            self.race.fail(message.index, f"its process died ({message.death or 'ended early'})")
        self._show()

    def _show(self) -> None:
        now = self.clock()
        race = self.race
        for panel in self.query(RacePanel).results():
            panel.show(race, now)
        pre_tokens = "" if race.distinct_pre_tokens is None else f" · {race.distinct_pre_tokens:,} distinct pre-tokens"
        self.query_one("#race-title", Static).update(
            f"race on {self.label} · {race.planned:,} merges (vocab {self.options.vocab_size:,}){pre_tokens}"
        )
        if not any(lane.state == MERGING for lane in race.lanes):
            self._ticker.pause()
        if race.over != self._over:  # ``s`` dims once nothing runs
            self._over = race.over
            self.refresh_bindings()

    # -- keys ----------------------------------------------------------------------------------

    def action_stop(self) -> None:
        now = self.clock()
        for i, lane in enumerate(self.race.lanes):
            if lane.state not in (FINISHED, STOPPED):
                self.race.stop(i, now)
                if i < len(self._children):
                    self._children[i].terminate()
        self._show()

    def action_back(self) -> None:
        self.workers.cancel_group(self, "racers")  # its thread ends both processes
        self.dismiss()

    def action_quit_app(self) -> None:
        self.app.exit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop":
            return not self.race.over or None  # dimmed once nothing runs
        # `q` goes back when the race was opened over another screen, and quits otherwise.
        if action in ("back", "quit_app"):
            return over_another(self) == (action == "back")
        return True
