"""One racer's progress: merges done of total on a bar, its rate, elapsed and projected time."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from bpe_tui.common.durations import show_seconds
from bpe_tui.race.state import COUNTING, FAILED, FINISHED, MERGING, READY, STOPPED, Lane, Race, show_rate
from bpe_tui.race.widgets.race_panel import RacePanel

BADGES = {
    COUNTING: "counting the corpus…",
    READY: "counted: waiting for the start",
    MERGING: "▶ merging",
    FINISHED: "■ finished",
    STOPPED: "■ stopped",
    FAILED: "✗ failed",
}


class RacerProgress(RacePanel):
    """Racer ``index``'s lane: a bar of merges, then time and speed in its own clock's seconds."""

    COMPONENT_CLASSES = {
        "racer-progress--bar",
        "racer-progress--done",
        "racer-progress--back",
        "racer-progress--dim",
        "racer-progress--label",
    }

    def __init__(self, index: int, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.index = index

    def show(self, race: Race, now: float) -> None:
        lane = race.lanes[self.index]
        self.border_title = f"{lane.racer.name}: {lane.racer.about}"
        self.border_subtitle = BADGES[lane.state]
        self.set_class(lane.state == FINISHED, "-finished")
        super().show(race, now)

    def draw(self, race: Race, now: float) -> RenderableType:
        lane = race.lanes[self.index]
        label = self.style_of("racer-progress--label")
        bar = Table.grid(expand=True, padding=(0, 1))
        bar.add_column(no_wrap=True)
        bar.add_column(ratio=1)
        bar.add_column(no_wrap=True, justify="right")
        bar.add_row(
            Text.assemble(("merges ", label), f"{lane.done:,}/{lane.total:,}"),
            ProgressBar(
                total=max(1, lane.total),
                completed=lane.done,
                style=self.style_of("racer-progress--back"),
                complete_style=self.style_of("racer-progress--bar"),
                finished_style=self.style_of("racer-progress--done"),
            ),
            f"{100 * lane.done // max(1, lane.total)}%",
        )
        dim = self.style_of("racer-progress--dim")
        counted = Text.assemble(("counting ", label), show_seconds(lane.counting) if lane.counting is not None else "…")
        counted.append("  reading and pre-tokenizing, before the start: not raced", dim)
        return Group(bar, self._timing(lane, now), counted)

    def _timing(self, lane: Lane, now: float) -> Text:
        label = self.style_of("racer-progress--label")
        if lane.state in (COUNTING, READY):
            return Text("merging  waits until both racers have counted the corpus", self.style_of("racer-progress--dim"))
        if lane.state == FAILED:
            return Text.assemble(("failed  ", label), lane.problem)
        text = Text.assemble(("merging ", label), show_seconds(lane.elapsed(now)), ("  at ", label), show_rate(lane.rate(now)))
        rate = lane.rate(now)
        if lane.state == MERGING:
            text.append_text(Text.assemble(("  to finish ", label), f"~{show_seconds(lane.to_finish(now))}"))
        elif lane.state == STOPPED and rate:
            text.append_text(Text.assemble(("  all ", label), f"would take ~{show_seconds(lane.total / rate)}"))
        elif lane.state == FINISHED and lane.total < lane.planned:
            text.append(f"  (no pairs left after {lane.done:,})", self.style_of("racer-progress--dim"))
        return text
