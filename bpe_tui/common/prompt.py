"""A one-question dialog: a line of input, Enter to accept, Escape to cancel."""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):
    """Dismisses with the text entered, or None on Escape."""

    CSS_PATH = "prompt.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", placeholder: str = "", integer: bool = False) -> None:
        super().__init__()
        self._question, self._value, self._placeholder = question, value, placeholder
        self._type: Literal["integer", "text"] = "integer" if integer else "text"

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Label(self._question)
            yield Input(self._value, placeholder=self._placeholder, type=self._type, select_on_focus=False)
            yield Label("Enter to accept · Escape to cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
