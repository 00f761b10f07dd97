"""The dialogs a screen asks through the app: a line of input, or yes or no."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label

T = TypeVar("T")


class Dialog(ModalScreen[T]):
    """A dialog the app opens for a screen: once mounted it focuses the widget that takes the
    keys and says so (``Opened``), so the app can hand it the keys typed while it opened."""

    CLOSING_KEYS: ClassVar[frozenset[str]]
    """The keys that close the dialog: the keys typed after one of them are not for it."""

    class Opened(Message):
        """``dialog`` has the focus where its keys go."""

        def __init__(self, dialog: Dialog[Any]) -> None:
            super().__init__()
            self.dialog = dialog

    def _opened(self, focus: Widget) -> None:
        self.set_focus(focus)
        self.post_message(self.Opened(self))


class PromptScreen(Dialog[str | None]):
    """Dismisses with the text entered, or None on Escape."""

    CSS_PATH = "prompt.tcss"
    CLOSING_KEYS = frozenset({"enter", "escape"})
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

    def on_mount(self) -> None:
        self._opened(self.query_one(Input))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(Dialog[bool]):
    """Dismisses with True on ``y`` (or the ``yes`` button), False on ``n``, Escape or ``no``.
    ``no`` has the focus: Enter alone keeps things as they are."""

    CSS_PATH = "prompt.tcss"
    CLOSING_KEYS = frozenset({"y", "n", "escape", "enter"})
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self._question, self._yes, self._no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Label(self._question)
            with Horizontal(id="answers"):
                yield Button(f"{self._yes} (y)", id="yes", variant="warning", compact=True)
                yield Button(f"{self._no} (n)", id="no", compact=True)

    def on_mount(self) -> None:
        self._opened(self.query_one("#no", Button))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
