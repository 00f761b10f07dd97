"""The base of every training panel: draws itself from the latest snapshot."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from bpe_tui.train.snapshot import TrainSnapshot


class SnapshotPanel(Widget):
    """Holds the newest ``TrainSnapshot``; repaints at most once per frame, however many arrive."""

    COMPONENT_CLASSES = {
        "panel--dim",
        "panel--label",
        "panel--winner",
        "panel--tie",
        "panel--up",
        "panel--down",
        "panel--newest",
    }

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.snapshot: TrainSnapshot | None = None

    def show(self, snapshot: TrainSnapshot) -> None:
        self.snapshot = snapshot
        self.refresh()

    def render(self) -> RenderableType:
        return "" if self.snapshot is None else self.draw(self.snapshot)

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        raise NotImplementedError

    def style_of(self, name: str) -> Style:
        """A rich style from this widget's component class ``name`` (set in the .tcss)."""
        return self.get_component_rich_style(name, partial=True)


def columns(
    rows: list[list[Text | str]],
    right: frozenset[int] = frozenset(),
    styles: list[Style | None] | None = None,
    gap: int = 2,
) -> Text:
    """Rows of cells as one ``Text``, each column as wide as its widest cell.

    A plain ``Text`` draws far faster than a rich ``Table``, which matters at full speed;
    cell widths count terminal cells, so Chinese and emoji line up. Columns in ``right``
    are right-aligned; ``styles`` gives each row a style (the header's first).
    """
    cells = [[Text(cell) if isinstance(cell, str) else cell for cell in row] for row in rows]
    widths: list[int] = []
    for row in cells:
        for i, cell in enumerate(row):
            if i == len(widths):
                widths.append(0)
            widths[i] = max(widths[i], cell.cell_len)
    out = Text()
    for n, row in enumerate(cells):
        if n:
            out.append("\n")
        line = Text(style=(styles[n] if styles and n < len(styles) else None) or "")
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - cell.cell_len)
            if i:
                line.append(" " * gap)
            if i in right:
                line.append(pad)
            line.append_text(cell)
            if i not in right and i < len(row) - 1:
                line.append(pad)
        out.append_text(line)
    return out
