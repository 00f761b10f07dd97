"""The rounds as a plot: the corpus log-likelihood (left axis) and the pieces left (right
axis, log scale) against the round. Drawn with ``textual-plotext`` (the ``plot`` extra);
``likelihood_rounds`` does without it."""

from __future__ import annotations

import math
from collections.abc import Callable

from textual_plotext import PlotextPlot

from bpe_tui.train.unigram.snapshot import UnigramSnapshot
from bpe_tui.train.widgets.growth_plot import nice_ticks


def compact(value: float) -> str:
    """An axis label in at most five characters: -197,385 as -197k, 3,144 as 3.1k, 999."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.0f}M" if size >= 1e7 else f"{value / 1e6:.1f}M"
    if size >= 1e3:
        return f"{value / 1e3:.0f}k" if size >= 1e4 else f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def ticks_of(marks: list[float], label: Callable[[float], str]) -> tuple[list[float], list[str]]:
    """The marks and their labels, a mark whose label repeats the one before left out."""
    kept: dict[str, float] = {}
    for mark in marks:
        kept.setdefault(label(mark), mark)
    return list(kept.values()), list(kept)


class RoundsPlot(PlotextPlot):
    """Log-likelihood after each round's EM, and the vocabulary left by each round."""

    COMPONENT_CLASSES = {"rounds-plot--likelihood", "rounds-plot--pieces"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._snapshot: UnigramSnapshot | None = None
        self.drawn_rounds = -1
        """The round of the snapshot on screen (-1: none yet)."""

    def show(self, snapshot: UnigramSnapshot) -> None:
        self._snapshot = snapshot
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        snapshot = self._snapshot
        if snapshot is None:
            return
        self.drawn_rounds = snapshot.rounds_done
        n = snapshot.rounds_done
        plt = self.plt
        plt.clear_figure()
        plt.xaxes(True, False)
        plt.xlim(0, max(1, n))
        ticks: list[float] = list(range(n + 1)) if n <= 10 else list(nice_ticks(n, 6))
        plt.xticks(ticks, [f"{t:g}" for t in ticks])
        if self.size.height >= 10:
            plt.xlabel("round")
        sizes = [snapshot.seeded] + [r.size_after for r in snapshot.rounds]
        logs = [math.log10(max(1, s)) for s in sizes]
        low, high = min(logs), max(logs)
        if high - low < 0.01:
            low, high = low - 0.5, high + 0.5
        plt.plot(list(range(n + 1)), logs, marker="braille", color=self._rgb("rounds-plot--pieces"), yside="right")
        # textual-plotext's stub types yside as a float; plotext takes "left" or "right".
        plt.ylim(low, high, "right")  # type: ignore[arg-type]
        plt.yticks(*ticks_of([low, (low + high) / 2, high], lambda m: compact(10**m)), "right")  # type: ignore[arg-type]
        if n:
            likelihoods = [r.log_likelihood for r in snapshot.rounds]
            plt.plot(list(range(1, n + 1)), likelihoods, marker="braille", color=self._rgb("rounds-plot--likelihood"))
            bottom, top = min(likelihoods), max(likelihoods)
            if top - bottom < 1:
                bottom, top = bottom - 1, top + 1
            plt.ylim(bottom, top, "left")  # type: ignore[arg-type]
            plt.yticks(*ticks_of([bottom, (bottom + top) / 2, top], compact), "left")  # type: ignore[arg-type]
        self.refresh()

    def _rgb(self, name: str) -> tuple[int, int, int]:
        color = self.get_component_rich_style(name).color
        return color.get_truecolor() if color is not None else (255, 255, 255)
