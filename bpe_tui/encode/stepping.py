"""What the encode views of WordPiece and Unigram share: a walk through one encode, laid end to
end, and a position in it that the keys move.

A view subclasses ``SteppedEncodeScreen`` with its own walk (``new_walk``), its own panels
(``show_details``) and its own status line; moving, editing the text, comparing and leaving
are the same in both.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from rich.text import Text
from textual import on
from textual.screen import Screen
from textual.widgets import Static, TextArea

from bpe_tui.common.navigation import OpenCompare, over_another
from bpe_tui.common.token_spans import TokenSpans
from engine.compare.baselines import SpanTokenizer


class Walk(Protocol):
    """An encode laid out step by step: its text and how many steps it takes."""

    @property
    def text(self) -> str: ...
    @property
    def words(self) -> int: ...
    @property
    def specials(self) -> int: ...


W = TypeVar("W", bound=Walk)

BACKWARD = ("previous_match", "previous_position", "to_start")
"""Actions that move towards the start: dimmed there."""
FORWARD = ("next_match", "next_lookup", "next_position", "next_word", "to_end")
"""Actions that move towards the end: dimmed there."""


class SteppedEncodeScreen(Screen[None], Generic[W]):
    """An encode view whose keys move ``at`` through a walk of ``last()`` steps."""

    AUTO_FOCUS = "#tokens"
    walk: W
    at: int
    """Steps made so far."""

    def new_walk(self, text: str) -> W:
        """The walk through the encode of ``text``."""
        raise NotImplementedError

    def last(self) -> int:
        """The step at which the walk ends."""
        raise NotImplementedError

    def spans(self) -> SpanTokenizer:
        """This tokenizer as a comparison row."""
        raise NotImplementedError

    def show_step(self) -> None:
        """Show the walk at ``at``: every panel, the status line, which keys can move."""
        self.show_details()
        self.query_one("#status", Static).update(self.status())
        self.refresh_bindings()

    def show_details(self) -> None:
        """The view's own panels at ``at``."""
        raise NotImplementedError

    def status(self) -> Text:
        """The line under the text: what the last step did."""
        raise NotImplementedError

    def scroll_tokens_to(self, first: int | None) -> None:
        """Once laid out, scroll the tokens to ``first``: a jump of many rows scrolls past the old end."""
        if first is not None:
            self.call_after_refresh(self.query_one(TokenSpans).scroll_to_span, first)

    def text_title(self, reads: str, specials: str) -> str:
        """The text panel's title: how the text is read, its words and added tokens."""
        walk = self.walk
        title = f"{reads}: {walk.words:,} word{'s' * (walk.words != 1)}"
        if walk.specials:
            title += f", {walk.specials:,} added token{'s' * (walk.specials != 1)}{specials}"
        return title + "  (/ to edit)"

    def go(self, at: int) -> None:
        at = max(0, min(at, self.last()))
        if at != self.at:
            self.at = at
            self.show_step()

    def on_mount(self) -> None:
        self.show_step()

    def action_to_end(self) -> None:
        self.go(self.last())

    def action_to_start(self) -> None:
        self.go(0)

    def action_edit_text(self) -> None:
        self.add_class("-editing")
        self.query_one("#text", TextArea).focus()

    def action_leave_text(self) -> None:
        self.remove_class("-editing")
        self.query_one(TokenSpans).focus()

    def action_compare(self) -> None:
        self.post_message(OpenCompare(self.walk.text, self.spans()))

    def action_back(self) -> None:
        self.dismiss()

    def action_quit_app(self) -> None:
        self.app.exit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Keys that cannot move the walk any further show dimmed.
        if action in BACKWARD:
            return self.at > 0 or None
        if action in FORWARD:
            return self.at < self.last() or None
        if action in ("edit_text", "leave_text"):
            editing = self.focused is not None and self.focused.id == "text"
            return editing == (action == "leave_text")
        # `q` goes back when this view was opened over another screen, and quits otherwise.
        if action in ("back", "quit_app"):
            return over_another(self) == (action == "back")
        return True

    @on(TextArea.Changed, "#text")
    def _text_edited(self, event: TextArea.Changed) -> None:
        self.walk = self.new_walk(event.text_area.text)
        self.at = self.last()
        self.show_step()
