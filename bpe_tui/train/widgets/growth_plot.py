"""The vocabulary's curves as a real plot: the winning count of every merge (log scale, left
axis) and bytes per token on the whole corpus (right axis), against the merge number.

Drawn with ``textual-plotext`` (the ``plot`` extra); ``vocab_growth`` falls back to a
sparkline without it. A plot costs milliseconds to draw, so it redraws at most every
``REDRAW`` seconds however fast snapshots come, and always draws the last one it got.
"""

from __future__ import annotations

import math
import time

from textual.timer import Timer
from textual_plotext import PlotextPlot

from bpe_tui.train.snapshot import TrainSnapshot

REDRAW = 0.25
"""Shortest time in seconds between two drawings of the plot."""


def per_token(corpus_size: int, counts: list[int]) -> list[float]:
    """Bytes (or characters) per token after each of 0, 1, ... merges: each merge removes
    ``count`` tokens."""
    out, tokens = [1.0], corpus_size
    for count in counts:
        tokens -= count
        out.append(corpus_size / max(1, tokens))
    return out


def nice_ticks(high: int, most: int) -> list[int]:
    """0 and multiples of a round step (1, 2, 5, 10, 20, ...) up to ``high``: at most ``most``."""
    step = next(m * 10**e for e in range(20) for m in (1, 2, 5) if high // (m * 10**e) + 1 <= most)
    return list(range(0, high + 1, step))


def short_number(value: float) -> str:
    """1, 10, 100, 1k, 10k, ... for the log axis."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


class GrowthPlot(PlotextPlot):
    """Winning count (log, left axis) and bytes (or characters) per token (right axis) per merge."""

    COMPONENT_CLASSES = {"growth-plot--count", "growth-plot--ratio"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._snapshot: TrainSnapshot | None = None
        self._drawn_at = 0.0
        self._pending: Timer | None = None
        self.drawn_merges = -1
        """The merge count of the snapshot on screen (-1: none yet)."""

    def show(self, snapshot: TrainSnapshot) -> None:
        self._snapshot = snapshot
        wait = self._drawn_at + REDRAW - time.monotonic()
        if wait <= 0:
            self._draw()
        elif self._pending is None:
            self._pending = self.set_timer(wait, self._draw)

    def on_resize(self) -> None:
        self._draw()  # one point per braille column: the sampling follows the width

    def _draw(self) -> None:
        self._pending = None
        snapshot = self._snapshot
        if snapshot is None:
            return
        self._drawn_at = time.monotonic()
        self.drawn_merges = snapshot.merges_done
        counts = snapshot.merge_counts
        ratios = per_token(snapshot.corpus_size, counts)
        n = len(counts)
        plt = self.plt
        plt.clear_figure()
        plt.xaxes(True, False)  # no frame line on top: one more row for the curves
        # Braille marks put two points in a column: more would only cost time.
        points = max(2, 2 * self.size.width)
        xs = sorted({round(i * n / (points - 1)) for i in range(points)})
        plt.xlim(0, max(1, n))
        ticks: list[float] = list(nice_ticks(max(1, n), 5))  # the stub's list[float] takes no list[int]
        plt.xticks(ticks, [f"{t:,}" for t in ticks])
        if self.size.height >= 10:
            plt.xlabel("merge")
        if n:
            # Counts fall by orders of magnitude: plotted as log10 on a linear axis, whose
            # ticks are labelled with the counts themselves.
            low, high = math.log10(min(counts)), math.log10(max(counts))
            decades: list[float] = list(range(math.floor(low), max(math.ceil(high), math.floor(low) + 1) + 1))
            merged = [x for x in xs if x]
            plt.plot(merged, [math.log10(counts[x - 1]) for x in merged], marker="braille", color=self._rgb("growth-plot--count"))
            # textual-plotext's stub types yside as a float; plotext takes "left" or "right".
            plt.ylim(decades[0], decades[-1], "left")  # type: ignore[arg-type]
            plt.yticks(decades, [short_number(10**d) for d in decades], "left")  # type: ignore[arg-type]
        top = max(1.01, ratios[-1])
        plt.plot(xs, [ratios[x] for x in xs], marker="braille", color=self._rgb("growth-plot--ratio"), yside="right")
        plt.ylim(1.0, top, "right")  # type: ignore[arg-type]  # (yside: as above)
        marks = [1.0, (1.0 + top) / 2, top]
        plt.yticks(marks, [f"{v:.2f}" for v in marks], "right")  # type: ignore[arg-type]
        self.refresh()

    def _rgb(self, name: str) -> tuple[int, int, int]:
        color = self.get_component_rich_style(name).color
        return color.get_truecolor() if color is not None else (255, 255, 255)
