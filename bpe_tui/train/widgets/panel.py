"""The base of every training panel: draws itself from the latest snapshot."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from textual.widget import Widget

from bpe_tui.common.tokens import raw_bytes
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

    @property
    def raw(self) -> bool:
        """Tokens as raw bytes (``x``), rather than naming the characters they hold part of."""
        return raw_bytes(self)

    def style_of(self, name: str) -> Style:
        """A rich style from this widget's component class ``name`` (set in the .tcss)."""
        return self.get_component_rich_style(name, partial=True)
