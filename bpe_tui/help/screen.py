"""The help that ``?`` opens over a screen: each panel in the lecture's words, and the keys."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget

from bpe_tui.help.text import ScreenHelp, Shown, render_help


class HelpText(Widget):
    """One screen's help text, styled from the .tcss when drawn."""

    COMPONENT_CLASSES = {"help-text--heading", "help-text--dim"}

    def __init__(self, entry: ScreenHelp, shown: Shown, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entry = entry
        self.shown = shown

    def render(self) -> RenderableType:
        style = self.get_component_rich_style
        heading, dim = style("help-text--heading", partial=True), style("help-text--dim", partial=True)
        return render_help(self.entry, self.app.BINDINGS, heading=heading, dim=dim, shown=self.shown)


class HelpScreen(ModalScreen[None]):
    """Scrolls when the text is taller than the terminal; esc, q or ? closes it."""

    CSS_PATH = "screen.tcss"
    BINDINGS = [Binding("escape,q,question_mark", "close", "close", tooltip="Close the help", id="help.close")]

    def __init__(self, entry: ScreenHelp, shown: Shown) -> None:
        """``shown``: whether the screen under the help has an action."""
        super().__init__()
        self.entry = entry
        self.shown = shown

    def compose(self) -> ComposeResult:
        with Vertical(id="help") as frame:
            frame.border_title = f"help: {self.entry.title}"
            frame.border_subtitle = "esc, q or ? closes · ↑ ↓ scroll"
            with VerticalScroll(id="help-scroll"):
                yield HelpText(self.entry, self.shown, id="help-text")

    def action_close(self) -> None:
        self.dismiss()
