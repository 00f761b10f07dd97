"""Warm tabs: each browser tab's app forked from a warm parent, not a new interpreter.

When the server starts, it starts multiprocessing's fork server with ``warm_parent``
preloaded, in the environment textual-serve gives a tab's app (Textual reads its driver,
colours and frame rate as it is imported): that fork server is the class's warm parent.
textual-serve still starts a process for each tab, with pipes for its standard streams:
``launch.py``, which hands the pipes and its environment to the server through a unix
socket in a directory only this user can enter (the door), and exits. The server asks the
warm parent for the tab's app (``session.run_session``) on those pipes; the app's trainer
forks from the same parent. A tab is two processes, its app and its trainer; the warm parent
and multiprocessing's resource tracker serve the whole class.

Where ``fork`` is missing (Windows) or unsafe (macOS, whose system libraries may not be
forked), ``cold`` says so, and each tab starts a new interpreter as before.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
import shlex
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import spawn
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from bpe_tui.serve.session import run_session

WARM = "BPE_TUI_SERVE_WARM"
"""The environment variable carrying the served command's warm-up to the warm parent."""
PRELOAD = "bpe_tui.serve.warm_parent"
LAUNCHER = Path(__file__).with_name("launch.py")
TAB = "bpe-tui tab"
"""The name of a tab's process, as multiprocessing knows it."""
log = logging.getLogger("bpe-tui")


def cold() -> str | None:
    """Why tabs start a new interpreter here, or None where they fork from the warm parent."""
    if not hasattr(os, "fork"):
        return "this system has no fork"
    if sys.platform == "darwin":
        return "fork is unsafe on macOS"
    return None


class WarmClass:
    """The warm parent, and the door through which each tab's launcher hands its streams."""

    def __init__(
        self,
        run: Callable[[argparse.Namespace], int],
        warm: Callable[[argparse.Namespace], None],
        args: argparse.Namespace,
        served: argparse.Namespace,
        environ: dict[str, str],
    ) -> None:
        """``warm(args)`` readies the warm parent; each tab's app runs ``run(served)``."""
        self._run, self._served = run, served
        self._folder = tempfile.mkdtemp(prefix="bpe-tui-serve-")  # mode 0700: only this user connects
        self.door = os.path.join(self._folder, "door")
        self._socket = socket.socket(socket.AF_UNIX)
        self._socket.bind(self.door)
        self._socket.listen(128)
        self._socket.setblocking(False)
        self._hands = ThreadPoolExecutor(1, thread_name_prefix="bpe-tui-door")
        """Starting a tab blocks (a few milliseconds): one thread, so tabs start one at a time."""
        self.tabs: set[BaseProcess] = set()
        """The app process of each open tab, until it ends."""
        self._environ = _start_warm_parent(warm, args, environ)
        """The warm parent's environment: each tab is sent how its own differs."""

    def command(self) -> str:
        """What textual-serve runs for each tab: the launcher, knocking at this door."""
        return shlex.join([sys.executable, "-I", "-S", str(LAUNCHER), self.door])

    async def let_in(self) -> None:
        """Start the app of each tab whose launcher knocks, until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                knock, _ = await loop.sock_accept(self._socket)
                tab = await loop.run_in_executor(self._hands, self._start_tab, knock)
            except (OSError, ValueError) as e:  # that tab's page says the app did not start
                log.error("a tab's app did not start: %s", e)
                await asyncio.sleep(0.1)  # out of file descriptors, say: the next knock may find some
                continue
            self.tabs.add(tab)
            loop.add_reader(tab.sentinel, self._ended, tab)

    def _start_tab(self, knock: socket.socket) -> BaseProcess:
        with knock:
            knock.setblocking(True)
            message, fds, _, _ = socket.recv_fds(knock, 1 << 16, 3)
            streams = [Connection(fd) for fd in fds]  # closed here once the tab holds its own
            try:
                if len(streams) != 3:
                    raise ValueError(f"the launcher sent {len(streams)} streams, not 3")
                while chunk := knock.recv(1 << 16):
                    message += chunk
                # Only the difference: a tab rewriting every variable would copy the pages of
                # the warm parent's that hold them.
                environ: dict[str, str] = json.loads(message)
                changed = {name: value for name, value in environ.items() if self._environ.get(name) != value}
                removed = [name for name in self._environ if name not in environ]
                tab = multiprocessing.get_context("forkserver").Process(
                    target=run_session, args=(self._run, self._served, changed, removed, streams), name=TAB
                )
                tab.start()
            finally:
                for stream in streams:
                    stream.close()
        return tab

    def _ended(self, tab: BaseProcess) -> None:
        asyncio.get_running_loop().remove_reader(tab.sentinel)
        tab.join()
        tab.close()
        self.tabs.discard(tab)

    async def ended(self, limit: float = 10.0) -> None:
        """Until every tab's app has ended (at most ``limit`` seconds), and a moment more for
        textual-serve to see their pipes close: the server may then stop."""
        end = asyncio.get_running_loop().time() + limit
        while self.tabs and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)

    def close(self) -> None:
        """Shut the door. The warm parent ends by itself once this process and every tab's
        have: each holds its pipe open."""
        self._socket.close()
        shutil.rmtree(self._folder, ignore_errors=True)
        self._hands.shutdown()


def _start_warm_parent(warm: Callable[[argparse.Namespace], None], args: argparse.Namespace, environ: dict[str, str]) -> dict[str, str]:
    """Start the fork server with ``warm_parent`` preloaded, in a tab's ``environ``, and
    return the environment it runs in. The warm-up travels pickled, as multiprocessing sends
    a process its target, with what unpickling it needs (``__main__`` when the server runs
    as ``python -m bpe_tui.cli``)."""
    preparation = spawn.get_preparation_data("bpe-tui warm parent")
    preparation.pop("authkey", None)  # each tab's process is sent its own, as multiprocessing sends it
    saved = os.environ.copy()
    os.environ.update(environ)
    os.environ[WARM] = base64.b64encode(pickle.dumps((preparation, pickle.dumps((warm, args))))).decode("ascii")
    try:
        multiprocessing.set_forkserver_preload([PRELOAD])
        multiprocessing.forkserver.ensure_running()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {**saved, **environ}  # the warm parent drops WARM as it reads it
