"""The Textual application: hosts the training screen and the encode view."""

from __future__ import annotations

from textual.app import App
from textual.screen import Screen


class BpeApp(App[int]):
    """Opens on ``first_screen``; the screens own their widgets, keys and styles."""

    TITLE = "bpe-tui"

    def __init__(self, first_screen: Screen) -> None:
        super().__init__()
        self._first_screen = first_screen

    def on_mount(self) -> None:
        self.push_screen(self._first_screen)
