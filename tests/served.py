"""``bpe-tui serve`` on a free loopback port, and headless Chromium driven over DevTools.

Chromium (the Debian package) is started with ``--remote-debugging-port=0`` and driven over
the Chrome DevTools Protocol through aiohttp's websocket client (aiohttp comes with
textual-serve). Every host name but 127.0.0.1 resolves to nothing, so the page's web font
and anything else off the machine is never fetched.

The page draws its terminal on a canvas (xterm.js), so the text on screen is read from
xterm's own buffer: a setter installed before the page's script runs keeps the terminal
object the page creates (``this.terminal = new Terminal(...)``) in ``window.bpeTerminal``.

``python -m tests.served docs/serve-train.png`` takes the screenshot at the top of the README.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import CLI_ENV, ROOT

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)
KEEP_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
    window.bpeTerminal = value;
  },
});
"""
SCREEN_TEXT = """(() => {
  const terminal = window.bpeTerminal;
  if (!terminal) return "";
  const buffer = terminal.buffer.active, lines = [];
  for (let y = 0; y < terminal.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    lines.push(line ? line.translateToString(true) : "");
  }
  return lines.join("\\n");
})()"""
KEYS = {"n": ("KeyN", 78), "?": ("Slash", 191), "escape": ("Escape", 27)}
"""DevTools key events: key -> (code, Windows virtual key code)."""


def chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PORT_TRIES = 3
"""Ports tried for one server: a port free when picked may be taken by another process (a
test running beside this one) before the server binds it."""


def wait_for_port(port: int, process: subprocess.Popen, limit: float = 30.0) -> None:
    """Until ``process`` itself listens on ``port``: a connection alone could reach another
    process that took the port first."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        assert process.poll() is None, "the server exited"
        if _listens(process.pid, port):
            return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port} after {limit:.0f} s")


@asynccontextmanager
async def serve(*served: str, log: Path) -> AsyncIterator[str]:
    """``bpe-tui serve SERVED --port P`` on loopback; its URL (see ``serving``)."""
    async with serving(*served, log=log) as (url, _):
        yield url


COLD = (
    "import sys, bpe_tui.serve.command as c; c.cold = lambda: 'fork is unsafe on macOS'; "
    "from bpe_tui.cli import main; sys.exit(main(sys.argv[1:]))"
)
"""``python -c COLD serve ...``: the server as it runs where tabs cannot fork warm."""


@asynccontextmanager
async def serving(
    *served: str, log: Path, cwd: Path = ROOT, home: Path | None = None, cold: bool = False
) -> AsyncIterator[tuple[str, int]]:
    """``bpe-tui serve SERVED --port P`` on loopback, in ``cwd`` with ``HOME`` at ``home``
    (``cold``: as where fork is missing or unsafe), P a free port (another one if a process
    took it before the server could listen there); its URL and its process group, which
    every app process it starts is in. On leaving, the server is stopped as Ctrl+C stops it,
    and it must take every app process it started with it. Async, so that a tab still open
    in this event loop can answer while the server stops."""
    for tries_left in reversed(range(PORT_TRIES)):
        port = free_port()
        with open(log, "w", encoding="utf-8") as out:
            process = subprocess.Popen(
                [sys.executable, *(["-c", COLD] if cold else ["-m", "bpe_tui.cli"]), "serve", *served, "--port", str(port)],
                cwd=cwd,
                env=CLI_ENV if home is None else {**CLI_ENV, "HOME": str(home)},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: what it leaves behind is findable
            )
        if tries_left and _port_taken(port, process, log):
            continue
        break
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/", process.pid
    finally:
        process.send_signal(signal.SIGINT)
        exited = await until(lambda: process.poll() is not None, limit=30.0)
        left = not await until(lambda: not _group_alive(process.pid), limit=15.0)
        if left or not exited:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert exited, "the server did not stop on Ctrl+C"
    assert not left, "the server left app processes running"


def _listens(pid: int, port: int) -> bool:
    import psutil

    try:
        server = psutil.Process(pid)
        found = (server.net_connections if hasattr(server, "net_connections") else server.connections)("tcp")  # the first: psutil 6
    except psutil.NoSuchProcess:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in found)


def _port_taken(port: int, process: subprocess.Popen, log: Path) -> bool:
    """Whether the server exited as ``port`` was in use: then another port is tried. Any
    other way it fails, ``wait_for_port`` says."""
    try:
        wait_for_port(port, process)
    except AssertionError:
        return process.poll() is not None and "address already in use" in log.read_text(encoding="utf-8").lower()
    return False


async def until(condition: Callable[[], bool], limit: float) -> bool:
    """Whether ``condition`` came true within ``limit`` seconds, the event loop running."""
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.1)
    return True


def group_members(pgid: int) -> list[int]:
    """The processes in group ``pgid``: the warm parent and every served tab's app and trainer
    stay in the server's group, and one orphaned by an app that died is found there still."""
    import psutil

    members = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid:
                members.append(pid)
        except ProcessLookupError:  # ended since listed
            pass
    return members


async def serving_alone(server: int) -> set[int]:
    """The server's process group with no tab open: the server, its warm parent (the fork
    server every tab's processes fork from) and multiprocessing's resource tracker."""
    assert await until(lambda: len(group_members(server)) == 3, limit=30.0), "no warm parent beside the server"
    return set(group_members(server))


def _group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has members."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class Page:
    """One Chromium tab, through its DevTools websocket."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._id = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        await self._ws.send_json({"id": self._id, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self._ws.receive(), timeout=30)
            if message.type != aiohttp.WSMsgType.TEXT:
                raise AssertionError(f"{method}: Chromium closed the DevTools connection")
            data = json.loads(message.data)
            if data.get("id") == self._id:  # events in between are not needed
                if "error" in data:
                    raise AssertionError(f"{method}: {data['error']}")
                return data["result"]

    async def open(self, url: str) -> None:
        await self.call("Page.enable")
        await self.call("Page.addScriptToEvaluateOnNewDocument", source=KEEP_TERMINAL)
        await self.call("Page.navigate", url=url)

    async def screen_text(self) -> str:
        result = await self.call("Runtime.evaluate", expression=SCREEN_TEXT, returnByValue=True)
        return result["result"].get("value") or ""

    async def wait_for(self, text: str, gone: bool = False, limit: float = 30.0) -> str:
        """The terminal's text once it shows ``text`` (or, with ``gone``, no longer does)."""
        end = time.monotonic() + limit
        while True:
            screen = await self.screen_text()
            if (text in screen) != gone:
                return screen
            if time.monotonic() > end:
                raise AssertionError(f"{text!r} {'stayed' if gone else 'never appeared'}; the page shows:\n{screen}")
            await asyncio.sleep(0.2)

    async def press(self, key: str) -> None:
        """A key press as the keyboard makes it, into the focused terminal."""
        await self.call("Runtime.evaluate", expression="window.bpeTerminal.focus()")
        code, virtual = KEYS[key]
        text = "" if len(key) > 1 else key
        name = "Escape" if key == "escape" else key
        await self.call("Input.dispatchKeyEvent", type="keyDown", key=name, code=code, text=text, windowsVirtualKeyCode=virtual)
        await self.call("Input.dispatchKeyEvent", type="keyUp", key=name, code=code, windowsVirtualKeyCode=virtual)

    async def screenshot(self, path: Path) -> None:
        shot = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


@asynccontextmanager
async def browser(width: int = 1280, height: int = 720) -> AsyncIterator[Page]:
    """A headless Chromium with a fresh profile, and its one tab."""
    path = chromium()
    assert path is not None
    with tempfile.TemporaryDirectory(prefix="bpe-tui-chromium-") as profile:
        process = subprocess.Popen(
            [
                path,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helper processes go with it
        )
        try:
            port = await _devtools_port(Path(profile, "DevToolsActivePort"), process)
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
                    targets = await response.json()
                tab = next(t for t in targets if t["type"] == "page")
                async with session.ws_connect(tab["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                    yield Page(ws)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            if not await until(lambda: process.poll() is not None, limit=10.0):
                process.kill()
                process.wait()
            # Its helpers gone too, nothing writes to the profile as it is removed.
            if not await until(lambda: not _group_alive(process.pid), limit=10.0):
                os.killpg(process.pid, signal.SIGKILL)


async def _devtools_port(file: Path, process: subprocess.Popen, limit: float = 30.0) -> int:
    """The port Chromium writes into its profile once DevTools listens."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        assert process.poll() is None, "Chromium exited at start"
        if file.exists() and (lines := file.read_text().split()):
            return int(lines[0])
        await asyncio.sleep(0.1)
    raise AssertionError(f"Chromium opened no DevTools port in {limit:.0f} s")


async def _screenshot(path: Path, merges: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # 960 pixels high: tall enough for the training screen's tall layout.
        async with serve("train", log=Path(tmp, "serve.log")) as url, browser(1280, 960) as page:
            await page.open(url)
            await page.wait_for("next merge: pair_counter top")
            for _ in range(merges):
                await page.press("n")
            await page.wait_for(f"merge {merges}/")
            await asyncio.sleep(1)  # the last frame painted
            await page.screenshot(path)


if __name__ == "__main__":
    asyncio.run(_screenshot(Path(sys.argv[1]), merges=int(sys.argv[2]) if len(sys.argv) > 2 else 3))
