"""The Viterbi's table for the word being read: one row a position, left to right, with the
best score of the characters before it and its back-pointer (the last piece of that best
way, and where that piece starts). Position 0 scores 0: nothing read, log 1.

Positions not reached yet are blank. Once the word's end is reached, the path is read
back from it, each back-pointer leading to the position its piece starts at: those rows
are marked, and the pieces of the path listed in order with their log p, which add up to
the word's score.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import token_text
from bpe_tui.encode.lattice import Focus


class BestScores(Widget):
    """Best score and back-pointer at each position of the word being read."""

    BORDER_TITLE = "best path, left to right (Viterbi)"

    COMPONENT_CLASSES = {"best-scores--dim", "best-scores--label", "best-scores--now", "best-scores--path"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._focus: Focus | None = None

    def show(self, focus: Focus | None) -> None:
        self._focus = focus
        self.refresh()

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"best-scores--{name}", partial=True)

    def render(self) -> RenderableType:
        focus = self._focus
        if focus is None:
            return Text("")
        lattice, viterbi = focus.lattice, focus.viterbi
        dim, label, now, on_path = (self._style(name) for name in ("dim", "label", "now", "path"))
        word = lattice.word
        path_ends = {lattice.nodes[k].end for k in lattice.best} | {0} if focus.done else set()
        rows: list[list[Text | str]] = [["pos", "read", "best", "← piece"]]
        styles: list[Style | None] = [label]
        for j in range(len(word) + 1):
            read = token_text(word[max(0, j - 1) : j].encode()) if j else Text("start", dim)
            if j > focus.filled:
                rows.append([str(j), read, "", ""])
                styles.append(dim)
                continue
            back = viterbi.back[j]
            pointer = Text("")
            if back >= 0:
                node = lattice.nodes[back]
                unknown = " <unk>" if node.unknown else ""
                pointer = Text.assemble(token_text(node.piece.encode()), unknown, (f" from {node.start}", "dim"))
            rows.append([str(j), read, f"{viterbi.best[j]:.2f}", pointer])
            styles.append(on_path if j in path_ends else now if j == focus.filled and not focus.done and focus.reached else None)
        head: list[RenderableType] = []
        if focus.done:
            pieces = [lattice.nodes[k] for k in lattice.best]
            line = Text("path: ", style=label)
            line.append_text(
                Text(" + ", style="dim").join(Text.assemble(token_text(n.piece.encode()), (f" {n.log_prob:.2f}", "dim")) for n in pieces)
            )
            line.append(f" = {lattice.score:.2f}", style="bold")
            head.append(line)
        elif focus.reached == 0:
            head.append(Text("n fills the next position: its best score, and from which piece", style=dim))
        width = max(1, self.content_size.width)
        room = max(1, self.content_size.height - 1 - sum(-(-line.cell_len // width) for line in head if isinstance(line, Text)))
        at = focus.filled + 1  # the row of the position shown (after the header)
        start = max(1, min(at - room // 2, len(rows) - room))
        table = columns(
            [rows[0], *rows[start : start + room]], right=frozenset({0, 2}), styles=[label, *styles[start : start + room]], gap=1
        )
        return Group(*head, table) if head else table
