"""A browser tab's app, forked from the warm parent (``bpe_tui.serve.warm``).

The warm parent is multiprocessing's fork server: the tab's process starts there with
Textual, Rich, the engine and the app already imported, and, copy-on-write, shares their
memory with every other tab until it writes to it. Forking reseeds ``random`` (its at-fork
hook), and the fork server hands the process only the file descriptors it was sent: the
tab's three pipes, and the two through which it asks for its own processes, none of the
server's sockets. It is a process of its own: a crash, ``q`` or a SIGKILL ends this tab alone.
"""

from __future__ import annotations

import argparse
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import sys
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection


def run_session(
    run: Callable[[argparse.Namespace], int],
    served: argparse.Namespace,
    changed: dict[str, str],
    removed: Sequence[str],
    streams: Sequence[Connection],
) -> None:
    """Run ``run(served)`` (the CLI on the command the server parsed) on the tab's standard
    streams, in its environment as textual-serve made it (the web driver, the tab's size):
    the warm parent's, with the variables ``changed`` set and those ``removed`` unset."""
    for fd, stream in enumerate(streams):
        os.dup2(stream.fileno(), fd)
        stream.close()
    # The fork server closed its standard input; Textual's web driver reads sys.__stdin__.
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)  # type: ignore[misc]
    for name in removed:
        del os.environ[name]
    os.environ.update(changed)
    # The app's own processes (the trainer) fork from the warm parent too, which was running
    # before this process and outlives it: there is no fork server to start, only to ask.
    multiprocessing.forkserver._forkserver.ensure_running = multiprocessing.resource_tracker.ensure_running  # type: ignore[method-assign]
    sys.exit(run(served))
