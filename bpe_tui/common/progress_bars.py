"""The headless commands' progress bars on stderr (``train --headless``, ``encode --out``)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Column
from rich.text import Text


class AmountColumn(ProgressColumn):
    """Done/total and rate in the task's own unit: bytes while reading, merges after."""

    def __init__(self) -> None:
        super().__init__(table_column=Column(no_wrap=True))

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        speed = task.completed / elapsed if elapsed else 0
        if task.fields.get("unit") == "bytes":
            of = "" if task.total is None else f"/{task.total / 1e6:,.1f}"  # a stream's size is unknown
            return Text(f"{task.completed / 1e6:,.1f}{of} MB  {speed / 1e6:,.1f} MB/s")
        return Text(f"{task.completed:,.0f}/{task.total or 0:,.0f}  {speed:,.0f}/s")


class TokenRateColumn(ProgressColumn):
    """Tokens written per second so far (the task's ``tokens`` field)."""

    def __init__(self) -> None:
        super().__init__(table_column=Column(no_wrap=True))

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        return Text(f"{task.fields['tokens'] / elapsed / 1e6 if elapsed else 0:,.2f}M tokens/s")


MAX_BAR = 40


def progress_bars(console: Console, *extra: ProgressColumn) -> Progress:
    """Bars with the task's name, percentage, amount and rate, ``extra`` columns and the time
    left, on one line: the bar takes the width the text leaves, up to ``MAX_BAR`` columns.
    Transient: the summary replaces them (and an error leaves just its line); off when
    stderr is not a terminal, where they would leave nothing but a blank line."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=None, table_column=Column(ratio=1, max_width=MAX_BAR)),
        TaskProgressColumn(),
        AmountColumn(),
        *extra,
        TimeRemainingColumn(),
        console=console,
        expand=False,
        transient=True,
        disable=not console.is_terminal,
    )
