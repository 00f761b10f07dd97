"""The verdict: do the two racers make the same merges, and how much faster is one."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.durations import show_seconds
from bpe_tui.common.tokens import parts_text
from bpe_tui.race.state import FINISHED, STOPPED, Race, show_rate, show_speedup
from bpe_tui.race.widgets.race_panel import RacePanel


class RaceVerdict(RacePanel):
    """Agreement, merge by merge as both arrive, and the speed-up once one racer finishes.

    A mismatch takes over the panel (``-mismatch``): the merge number and both pairs.
    """

    COMPONENT_CLASSES = {"race-verdict--good", "race-verdict--bad", "race-verdict--label", "race-verdict--dim"}

    def show(self, race: Race, now: float) -> None:
        self.set_class(race.mismatch is not None, "-mismatch")
        self.border_title = "✗ THE MERGES DIFFER" if race.mismatch is not None else "verdict"
        super().show(race, now)

    def draw(self, race: Race, now: float) -> RenderableType:
        return Text("\n").join([self._agreement(race), self._speedup(race, now)])

    def _agreement(self, race: Race) -> Text:
        names = [lane.racer.name for lane in race.lanes]
        if race.mismatch is not None:
            bad = self.style_of("race-verdict--bad")
            m = race.mismatch
            text = Text(f"✗ MISMATCH at merge {m.index:,}: ", bad)
            for n, (name, pair) in enumerate(zip(names, m.pairs, strict=True)):
                text.append(", " if n else "", bad)
                text.append(f"{name} merged ", bad)
                text.append_text(parts_text(list(pair), sep=" + ") if pair else Text("nothing (no pairs left)"))
            text.append("\nBoth must make the same merges in the same order: one of them is wrong.", bad)
            return text
        good = self.style_of("race-verdict--good")
        if race.agreed:
            return Text(f"✓ all {race.compared:,} merges agree", good)
        if race.compared:
            return Text.assemble(
                (f"✓ {race.compared:,} merges agree so far", good),
                ("  each compared once both have made it", self.style_of("race-verdict--dim")),
            )
        return Text("agreement: every merge is compared as soon as both racers have made it", self.style_of("race-verdict--dim"))

    def _speedup(self, race: Race, now: float) -> Text:
        label = self.style_of("race-verdict--label")
        measured = race.speedup(now)
        if measured is None:
            return Text("speed-up: measured once a racer has finished", self.style_of("race-verdict--dim"))
        ratio, fast, slow = measured
        if fast.state == FINISHED and slow.state == FINISHED:
            return Text.assemble(
                ("final speed-up ", label),
                f"{show_speedup(ratio)}: {fast.racer.name} {show_seconds(fast.elapsed(now))}, "
                f"{slow.racer.name} {show_seconds(slow.elapsed(now))} for {slow.done:,} merges",
            )
        return Text.assemble(
            ("speed-up so far ", label),
            f"{show_speedup(ratio)}: {fast.racer.name} {show_rate(fast.rate(now))} vs {slow.racer.name} "
            f"{show_rate(slow.rate(now))}{', stopped' if slow.state == STOPPED else ''}",
        )
