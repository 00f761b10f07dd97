"""Vocabulary growth: compression so far, the winning count per merge, the newest tokens.

The curves are a plot with axes when textual-plotext is installed (``growth_plot``), else
sparklines and a line saying how to get the plot.
"""

from __future__ import annotations

import math

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Sparkline

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import named_token_text
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel

try:
    from bpe_tui.train.widgets.growth_plot import GrowthPlot
except ImportError:  # the plot extra is not installed
    GrowthPlot = None  # type: ignore[assignment,misc]

PLOT_HINT = "pip install 'bpe-tui[plot]' for plots"


class Compression(SnapshotPanel):
    """Bytes (or characters) per token on the whole corpus, and the winning counts the chart
    below plots."""

    COMPONENT_CLASSES = {"compression--count", "compression--ratio"}

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, label = self.style_of("panel--dim"), self.style_of("panel--label")
        unit = snapshot.size_unit
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{snapshot.per_token:.2f} {unit}/token", label)
        text.append(f"  {snapshot.corpus_size:,} {unit} → {snapshot.tokens_in_corpus:,} tokens\n", dim)
        counts = snapshot.merge_counts
        if GrowthPlot is not None:  # the plot's legend, in its colours
            text.append("━ winning count", self.style_of("compression--count"))
            text.append(" (log)  ", dim)
            text.append(f"━ {unit}/token", self.style_of("compression--ratio"))
            text.append("  by merge", dim)
        elif counts:
            text.append(f"winning count per merge (log): {counts[0]:,} → {counts[-1]:,}", dim)
        else:
            text.append("winning count per merge: none yet", dim)
        return text


class NewestTokens(SnapshotPanel):
    """The newest vocabulary entries, newest first."""

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, newest = self.style_of("panel--dim"), self.style_of("panel--newest")
        rows: list[list[Text | str]] = [["id", "new token", "count"]]
        for i, (token_id, token, count) in enumerate(snapshot.newest[: max(1, self.content_size.height - 1)]):
            shown = named_token_text(token, snapshot.chars(token), newest if i == 0 else "", dim, self.raw)
            rows.append([str(token_id), shown, f"{count:,}"])
        return columns(rows, right=frozenset({0, 2}), styles=[dim])


class VocabGrowth(Vertical):
    """Compression, a chart of the winning counts, and the newest tokens."""

    BORDER_TITLE = "vocabulary"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-plot" if GrowthPlot is not None else None)
        self._log_counts: list[float] = []

    def compose(self) -> ComposeResult:
        yield Compression()
        if GrowthPlot is not None:
            yield GrowthPlot(id="growth-plot")
        else:
            yield Sparkline([], id="winning-counts")
            yield Label(PLOT_HINT, id="plot-hint", markup=False)
        yield NewestTokens()

    def show(self, snapshot: TrainSnapshot) -> None:
        self.query_one(Compression).show(snapshot)
        self.query_one(NewestTokens).show(snapshot)
        if GrowthPlot is not None:
            self.query_one(GrowthPlot).show(snapshot)
            return
        # Counts fall by orders of magnitude; a log scale keeps late merges visible. Merges
        # are deterministic, so after going back the kept prefix is still right.
        logs, counts = self._log_counts, snapshot.merge_counts
        del logs[len(counts) :]
        logs.extend(math.log10(c) for c in counts[len(logs) :])
        chart = self.query_one(Sparkline)
        # One value per column: the chart then draws in no time, however many merges.
        width = max(1, chart.size.width)
        n = len(logs)
        chart.data = list(logs) if n <= width else [max(logs[i * n // width : (i + 1) * n // width]) for i in range(width)]
