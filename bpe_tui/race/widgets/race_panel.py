"""The base of every race panel: draws itself from the race as it stands."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from textual.widget import Widget

from bpe_tui.race.state import Race


class RacePanel(Widget):
    """Holds the race and the time it was last looked at; repaints when shown again."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.race: Race | None = None
        self.now = 0.0

    def show(self, race: Race, now: float) -> None:
        self.race, self.now = race, now
        self.refresh()

    def render(self) -> RenderableType:
        return "" if self.race is None else self.draw(self.race, self.now)

    def draw(self, race: Race, now: float) -> RenderableType:
        raise NotImplementedError

    def style_of(self, name: str) -> Style:
        """A rich style from this widget's component class ``name`` (set in the race's screen.tcss)."""
        return self.get_component_rich_style(name, partial=True)
