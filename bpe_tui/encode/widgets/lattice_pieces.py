"""A word's lattice: every piece of the vocabulary that fits somewhere in the word, with the
characters it covers and its log-probability, in the order the Viterbi tries them (by where
they end, then where they start).

The pieces ending at the position just filled are lit, each with the total it makes (the
best score where it starts, plus its log p), the best of them marked; those ending further
on wait, dimmed. Once the path is read back, its pieces are marked. Only the rows around the
position shown are drawn: a long word's lattice has hundreds.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import token_text
from bpe_tui.encode.lattice import Focus, node_label


class LatticePieces(Widget):
    """The lattice of the word being read."""

    BORDER_TITLE = "lattice"

    COMPONENT_CLASSES = {"lattice-pieces--dim", "lattice-pieces--label", "lattice-pieces--now", "lattice-pieces--best"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._focus: Focus | None = None

    def show(self, focus: Focus | None) -> None:
        self._focus = focus
        if focus is not None:
            nodes = len(focus.lattice.nodes)
            self.border_title = f"lattice of {focus.lattice.word} ({nodes:,})"
        self.refresh()

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"lattice-pieces--{name}", partial=True)

    def render(self) -> RenderableType:
        focus = self._focus
        if focus is None:
            return Text("No word: the text is only added tokens.", style="italic")
        lattice, viterbi = focus.lattice, focus.viterbi
        dim, label, now, best = (self._style(name) for name in ("dim", "label", "now", "best"))
        path = set(lattice.best) if focus.done else set()
        order = [k for end in range(1, len(lattice.word) + 1) for k in viterbi.ending[end]]
        rows: list[list[Text | str]] = [["chars", "piece", "log p", "total", ""]]
        styles: list[Style | None] = [label]
        lit: list[int] = []
        """Rows of the position just filled, or of the path once read back."""
        for k in order:
            node = lattice.nodes[k]
            piece = token_text(node.piece.encode()) if not node.unknown else Text(f"{node.piece} <unk>")
            tried = node.end <= focus.filled
            total = f"{viterbi.total(lattice, k):.2f}" if tried else ""
            mark, style = "", None if tried else dim
            if node.end == focus.filled and focus.reached and not focus.done:
                chosen = viterbi.back[node.end] == k
                mark, style = ("◀ best" if chosen else ""), (best if chosen else now)
                lit.append(len(rows))
            elif k in path:
                mark, style = "★ path", best
                lit.append(len(rows))
            rows.append([node_label(node), piece, f"{node.log_prob:.2f}", total, Text(mark, style="bold")])
            styles.append(style)
        room = max(1, self.content_size.height - 1)
        start = max(1, min((lit[0] - 2) if lit else 1, len(rows) - room))  # the lit rows, a little before them
        shown, shown_styles = [rows[0], *rows[start : start + room]], [label, *styles[start : start + room]]
        table = columns(shown, right=frozenset({2, 3}), styles=shown_styles, gap=1)
        word = lattice.word
        if max(map(cell_len, table.plain.splitlines()), default=0) + 2 + cell_len(word) <= self.content_size.width:
            # Room for the lattice drawn: each piece a bar under the characters it covers.
            bars: list[Text | str] = [token_text(word.encode())]
            for k in order[start - 1 : start - 1 + room]:
                node = lattice.nodes[k]
                bars.append(" " * cell_len(word[: node.start]) + "━" * cell_len(word[node.start : node.end]))
            shown = [[*row, bar] for row, bar in zip(shown, bars, strict=True)]
            table = columns(shown, right=frozenset({2, 3}), styles=shown_styles, gap=1)
        return table
