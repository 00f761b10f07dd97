"""The base of Unigram's panels: each draws itself from the newest snapshot."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from bpe_tui.train.unigram.snapshot import UnigramSnapshot


class RoundPanel(Widget):
    """Holds the newest ``UnigramSnapshot`` and draws it (``draw``), again when resized."""

    COMPONENT_CLASSES = {"round-panel--dim", "round-panel--label", "round-panel--best", "round-panel--up", "round-panel--down"}

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.snapshot: UnigramSnapshot | None = None

    def show(self, snapshot: UnigramSnapshot) -> None:
        self.snapshot = snapshot
        self.refresh()

    def render(self) -> RenderableType:
        return "" if self.snapshot is None else self.draw(self.snapshot)

    def draw(self, snapshot: UnigramSnapshot) -> RenderableType:
        raise NotImplementedError

    def lines_of(self, text: Text) -> int:
        """Rows ``text`` takes in this panel, wrapped at its width."""
        return len(text.wrap(self.app.console, max(1, self.content_size.width))) if text else 0

    def above(self, text: Text, table: Text | None) -> RenderableType:
        """``text`` (wrapped) above ``table`` (one line a row, cut at the width)."""
        if table is None:
            return text
        table.no_wrap, table.overflow = True, "ellipsis"
        return Group(text, table)

    def style_of(self, name: str) -> Style:
        """A rich style from this widget's component class ``round-panel--NAME`` (set in the .tcss)."""
        return self.get_component_rich_style(f"round-panel--{name}", partial=True)
