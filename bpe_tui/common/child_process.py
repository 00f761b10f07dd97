"""A process of the app's own: commands go to it down one pipe, reports come back up another.

The training screen's trainer and the race's two trainers each run in one, so the interface
never shares the interpreter lock with their work. Processes come from a fork server: once
an app runs, stderr is captured and has no file descriptor to hand to a forked child, so the
server is started before (``ensure_running``). A served browser tab's app was itself started
by a fork server, the class's warm parent (``bpe_tui.serve``), and asks that one.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import signal
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any


def ensure_running() -> None:
    """Start this app's fork server, unless a fork server started the app: then its
    processes come from that one."""
    if multiprocessing.forkserver.get_inherited_fds() is None:
        multiprocessing.forkserver.ensure_running()


Report = tuple[Any, ...]
"""What a child sends back up its pipe: a tuple whose first item names the report."""


class ChildProcess:
    """Starts ``target(commands, reports, *args)`` in a new process named ``name``."""

    def __init__(self, target: Callable[..., None], args: tuple[object, ...], name: str) -> None:
        context = multiprocessing.get_context("forkserver")
        commands_in, self._commands = context.Pipe(duplex=False)
        self.reports, reports_out = context.Pipe(duplex=False)
        self.process = context.Process(target=target, name=name, args=(commands_in, reports_out, *args))
        self.process.start()
        commands_in.close()
        reports_out.close()

    def send(self, command: object) -> None:
        self._commands.send(command)

    def terminate(self) -> None:
        """Ask the process to end now (SIGTERM); whoever reads its reports sees the pipe close."""
        self.process.terminate()

    def close(self, terminate: bool = False) -> None:
        """Wait for the process to end (ending it first if ``terminate``)."""
        if terminate:
            self.process.terminate()
        self.process.join()

    def death(self) -> str | None:
        """How an ended process died (``killed by SIGKILL``, ``exit status 3``); None if it exited cleanly."""
        code = self.process.exitcode
        if not code:
            return None
        return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def listen(children: Sequence[ChildProcess], stopped: Callable[[], bool], tick: float = 0.1) -> Iterator[tuple[int, Report] | None]:
    """``(index, report)`` for each report of ``children``, in arrival order, until every one
    has closed its pipe or ``stopped()``; None after each ``tick`` seconds without a report."""
    open_pipes: dict[Connection, int] = {child.reports: i for i, child in enumerate(children)}
    while open_pipes and not stopped():
        ready = wait(list(open_pipes), tick)
        if not ready:
            yield None
        for pipe in ready:
            assert isinstance(pipe, Connection)  # wait() hands back some of the pipes it was given
            try:
                report = pipe.recv()
            except EOFError:
                del open_pipes[pipe]
                continue
            yield open_pipes[pipe], report
