"""The one-line status: ``merge K/TOTAL``, what the trainer is doing, and the speed; opened
by ``bpe-tui check``, the merge of the student's that differs (``note``)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


class StatusLine(Widget):
    """``merge K/TOTAL`` first, always; then the activity and the corpus."""

    COMPONENT_CLASSES = {"status-line--merge", "status-line--note", "status-line--activity", "status-line--dim"}

    merges_done: reactive[int] = reactive(0)
    merges_planned: reactive[int | None] = reactive(0)
    """None until known (classic BPE's: once the corpus is read)."""
    activity: reactive[str] = reactive("")
    detail: reactive[str] = reactive("")
    note: reactive[str] = reactive("")
    """Shown after the merge, always (``check: your merge 32 differs``); empty: none."""

    def render(self) -> RenderableType:
        style = self.get_component_rich_style
        text = Text(no_wrap=True, overflow="ellipsis")
        planned = "?" if self.merges_planned is None else f"{self.merges_planned:,}"
        text.append(f" merge {self.merges_done:,}/{planned} ", style("status-line--merge"))
        if self.note:
            text.append(f" {self.note} ", style("status-line--note"))
        text.append(f" {self.activity} ", style("status-line--activity"))
        text.append(f" {self.detail}", style("status-line--dim"))
        return text
