"""The headless commands' progress on stderr (``train --headless``, ``encode --out``): bars on
a terminal, lines in a log."""

from __future__ import annotations

import os
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TaskProgressColumn, TextColumn, TimeRemainingColumn
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
LOG_SECONDS = float(os.environ.get("BPE_TUI_PROGRESS_SECONDS", 30))
"""Where stderr is no terminal, how often the tasks under way are written as lines."""
DRAW_SECONDS = 0.1
"""On a terminal, how often the bars are drawn again, at an update."""


class LoggedProgress(Progress):
    """Bars on a terminal, drawn at an update once ``DRAW_SECONDS`` have passed since they
    last were; elsewhere (a log file, a pipe), the tasks under way written as one line each
    at an update once ``LOG_SECONDS`` have passed since the last lines, so that a long run's
    log says how far it is and how long it has left. A run shorter than that writes
    nothing. No thread of its own, where rich would draw from one: counting forks its
    workers only from a process that runs none, and from one that does it starts them from
    a fork server instead (46 MB of English counted by two workers, five runs each on a busy
    machine: 0.33-0.38 s forked, 0.45-0.60 s from a fork server)."""

    def __init__(self, *columns: ProgressColumn, console: Console) -> None:
        self.logged = not console.is_terminal
        super().__init__(*columns, console=console, expand=False, transient=True, disable=self.logged, auto_refresh=False)
        self._logged_at = self._drawn_at = time.monotonic()

    def update(self, task_id: TaskID, **fields: Any) -> None:
        super().update(task_id, **fields)
        now = time.monotonic()
        if not self.logged and now - self._drawn_at >= DRAW_SECONDS:
            self._drawn_at = now
            self.refresh()
        if self.logged and now - self._logged_at >= LOG_SECONDS:
            self._logged_at = now
            tasks = [task for task in self.tasks if task.started and not task.finished]
            if tasks:
                self.console.print(self.make_tasks_table(tasks), crop=False, overflow="ignore")


def progress_bars(console: Console, *extra: ProgressColumn) -> Progress:
    """Bars with the task's name, percentage, amount and rate, ``extra`` columns and the time
    left, on one line: the bar takes the width the text leaves, up to ``MAX_BAR`` columns.
    Transient: the summary replaces them (and an error leaves just its line). Where stderr
    is not a terminal, a line a task every ``LOG_SECONDS`` instead (``LoggedProgress``)."""
    return LoggedProgress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=None, table_column=Column(ratio=1, max_width=MAX_BAR)),
        TaskProgressColumn(),
        AmountColumn(),
        *extra,
        TimeRemainingColumn(),
        console=console,
    )
