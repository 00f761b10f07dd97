"""The rounds so far: the corpus log-likelihood after each round's EM, and the vocabulary
shrinking from the seeds towards the size asked for.

A table of the rounds (the newest that fit), and below it a plot with axes when
textual-plotext is installed (``rounds_plot``), else two sparklines and a line saying how to
get the plot.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Sparkline

from bpe_tui.common.columns import columns
from bpe_tui.train.unigram.snapshot import UnigramSnapshot
from bpe_tui.train.unigram.widgets.round_panel import RoundPanel

try:
    from bpe_tui.train.unigram.widgets.rounds_plot import RoundsPlot
except ImportError:  # the plot extra is not installed
    RoundsPlot = None  # type: ignore[assignment,misc]

PLOT_HINT = "pip install 'bpe-tui[plot]' for plots"
WIDE = 40
"""The table's width with characters per token, the column left out when narrower."""


class RoundTable(RoundPanel):
    """One row a round: its log-likelihood, the pieces it left and characters per token on
    its best paths; round 0 is the seeds. With the plot, a legend in its colours first."""

    COMPONENT_CLASSES = {"round-table--likelihood", "round-table--pieces"}

    def draw(self, snapshot: UnigramSnapshot) -> RenderableType:
        dim, label = self.style_of("dim"), self.style_of("label")
        text = Text(no_wrap=True, overflow="ellipsis")
        if RoundsPlot is not None:
            text.append("━ log-likelihood", self.get_component_rich_style("round-table--likelihood"))
            text.append("  ")
            text.append("━ pieces (log)", self.get_component_rich_style("round-table--pieces"))
        wide = self.content_size.width >= WIDE
        rows: list[list[Text | str]] = [["round", "log-likelihood", "pieces", "chars/token"]]
        rows.append(["0", Text("seeds", dim), f"{snapshot.seeded:,}", ""])
        for r in snapshot.rounds:
            per_token = f"{snapshot.corpus_chars / max(1, r.tokens):.2f}"
            rows.append([f"{r.number}" + (" end" if r.final else ""), f"{r.log_likelihood:,.1f}", f"{r.size_after:,}", per_token])
        if not wide:
            rows = [row[:3] for row in rows]
        room = self.content_size.height - (1 if text else 0) - 1
        if room < 1:
            return text
        shown = [rows[0], *rows[1:][-room:]]
        styles: list[Style | None] = [label, *[None] * (len(shown) - 2), self.style_of("best")]  # the newest round lit
        table = columns(shown, right=frozenset({1, 2, 3}), styles=styles, gap=1)
        out = Text("\n").join([text, table]) if text else table
        out.no_wrap, out.overflow = True, "ellipsis"
        return out


class LikelihoodRounds(Vertical):
    """The rounds as a table, and as a plot (or sparklines) below it."""

    BORDER_TITLE = "rounds: likelihood, pieces"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-plot" if RoundsPlot is not None else None)

    def compose(self) -> ComposeResult:
        yield RoundTable()
        if RoundsPlot is not None:
            yield RoundsPlot(id="rounds-plot")
        else:
            yield Sparkline([], id="likelihood-line")
            yield Sparkline([], id="pieces-line")
            yield Label(PLOT_HINT, id="plot-hint", markup=False)

    def show(self, snapshot: UnigramSnapshot) -> None:
        self.query_one(RoundTable).show(snapshot)
        if RoundsPlot is not None:
            self.query_one(RoundsPlot).show(snapshot)
            return
        self.query_one("#likelihood-line", Sparkline).data = [r.log_likelihood for r in snapshot.rounds]
        self.query_one("#pieces-line", Sparkline).data = [snapshot.seeded] + [r.size_after for r in snapshot.rounds]
