"""The Textual application: hosts the training screen and the encode view."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from engine import BpeError


class BpeApp(App[int]):
    """Opens on ``first_screen``; the screens own their widgets, keys and styles.

    Every key binding of the current screen is also a command in the palette (ctrl+p), and
    each has an id (``train.step``, ...) so ``set_keymap`` can remap it.
    """

    TITLE = "bpe-tui"

    def __init__(self, first_screen: Screen) -> None:
        super().__init__()
        self._first_screen = first_screen
        self.failure: BpeError | None = None
        """Set when a screen hits bad input; the command reports it once the app has closed."""

    def on_mount(self) -> None:
        self.push_screen(self._first_screen)

    def fail(self, error: BpeError) -> None:
        self.failure = error
        self.exit(return_code=2)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in screen.BINDINGS:
            if isinstance(binding, Binding) and binding.tooltip:
                yield SystemCommand(
                    f"{binding.description} ({binding.key_display or binding.key})",
                    binding.tooltip,
                    partial(self.run_action, binding.action, screen),
                )
