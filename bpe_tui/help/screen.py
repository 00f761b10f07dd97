"""The help that ``?`` opens over a screen: the help text that screen carries, and its keys."""

from __future__ import annotations

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget

from bpe_tui.common.screen_help import ScreenHelp, Shown, render_help


class HelpText(Widget):
    """One screen's help text, styled from the .tcss when drawn."""

    COMPONENT_CLASSES = {"help-text--heading", "help-text--dim"}

    def __init__(self, entry: ScreenHelp, bindings: list[BindingType], shown: Shown, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entry = entry
        self.bindings = bindings
        self.shown = shown

    def render(self) -> RenderableType:
        style = self.get_component_rich_style
        heading, dim = style("help-text--heading", partial=True), style("help-text--dim", partial=True)
        return render_help(self.entry, self.bindings, self.app.BINDINGS, heading=heading, dim=dim, shown=self.shown)


class HelpScreen(ModalScreen[None]):
    """Scrolls when the text is taller than the terminal; esc, q or ? closes it."""

    CSS_PATH = "screen.tcss"
    BINDINGS = [Binding("escape,q,question_mark", "close", "close", tooltip="Close the help", id="help.close")]

    def __init__(self, entry: ScreenHelp, bindings: list[BindingType], shown: Shown) -> None:
        """``bindings``: the keys of the screen under the help; ``shown``: whether it has an action."""
        super().__init__()
        self.entry = entry
        self.bindings = bindings
        self.shown = shown

    def compose(self) -> ComposeResult:
        with Vertical(id="help") as frame:
            frame.border_title = f"help: {self.entry.title}"
            frame.border_subtitle = "esc, q or ? closes · ↑ ↓ scroll"
            with VerticalScroll(id="help-scroll"):
                yield HelpText(self.entry, self.bindings, self.shown, id="help-text")

    def action_close(self) -> None:
        self.dismiss()
