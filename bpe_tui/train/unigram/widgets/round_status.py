"""The one-line status of Unigram's training: ``round K``, the pieces left against the
vocabulary asked for, what the trainer is doing, and the corpus."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


class RoundStatus(Widget):
    """``round K`` first, always; then the pieces, the activity and the details."""

    COMPONENT_CLASSES = {"round-status--round", "round-status--activity", "round-status--dim"}

    rounds_done: reactive[int] = reactive(0)
    pieces: reactive[int | None] = reactive(None)
    """Pieces now, special tokens not counted (None until the corpus is read)."""
    vocab_size: reactive[int] = reactive(0)
    specials: reactive[int] = reactive(1)
    finished: reactive[bool] = reactive(False)
    activity: reactive[str] = reactive("")
    detail: reactive[str] = reactive("")

    def render(self) -> RenderableType:
        style = self.get_component_rich_style
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" round {self.rounds_done:,} ", style("round-status--round"))
        if self.pieces is not None:
            goal = self.vocab_size - self.specials
            short = self.finished and self.pieces < goal  # the corpus supports no more
            text.append(f" {self.pieces:,} pieces, short of {goal:,} " if short else f" {self.pieces:,} pieces → {goal:,} ")
        text.append(f" {self.activity} ", style("round-status--activity"))
        text.append(f" {self.detail}", style("round-status--dim"))
        return text
