"""How many browser tabs does ``bpe-tui serve`` hold? A class connecting at once, measured.

Serves ``bpe-tui train`` (the bundled sample, the default corpus) on a free 127.0.0.1 port,
then opens ``--sessions`` websockets at once, each speaking textual-serve's protocol as a
browser tab does (``["stdin", key]`` up, the terminal's bytes down). Each tab waits for the
training screen, then steps ``--steps`` merges with ``n``, each once the last has shown.

- first frame: from asking for the websocket to the first bytes of the app's screen;
- ready: until the panels show the corpus read (``⏸ paused``), when keys start to step;
- step: from sending ``n`` until the screen shows the new merge;
- memory per session: with every tab open and stepped, the RSS of each tab's processes
  summed (the shell textual-serve starts, the app, its fork server, resource tracker and
  trainer); PSS beside it shares each page out among the processes mapping it;
- CPU per session: the CPU seconds those processes used to start, read the corpus and step,
  which is what makes a class connecting at once wait on a machine with few cores.

Only loopback; every wait is bounded; the server is stopped (Ctrl+C, as a teacher would)
and its process group checked empty before the table is printed.

    python benchmarks/bench_serve.py [--sessions 30] [--steps 3] [--memory-gb 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import psutil

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
LIMIT = 180.0
"""Seconds any one wait may take before the run gives up (2 shared cores, 30 apps starting)."""
MB = 1024 * 1024


class Tab:
    """One browser tab's websocket, and the terminal text it has been sent."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.seen = ""

    async def until(self, text: str) -> None:
        end = time.monotonic() + LIMIT
        while text not in self.seen:
            message = await asyncio.wait_for(self.ws.receive(), timeout=max(0.1, end - time.monotonic()))
            if message.type != aiohttp.WSMsgType.BINARY:
                if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    raise RuntimeError(f"the tab closed before showing {text!r}")
                continue
            # Only the tail matters: the next text looked for is drawn after it.
            self.seen = (self.seen + ANSI.sub("", message.data.decode("utf-8", errors="replace")))[-20_000:]


class Class:
    """The tabs together: how many have stepped, and when they may leave."""

    def __init__(self, size: int) -> None:
        self.size, self.stepped = size, 0
        self.all_stepped, self.leave = asyncio.Event(), asyncio.Event()

    def one_stepped(self) -> None:
        self.stepped += 1
        if self.stepped == self.size:
            self.all_stepped.set()


async def session(http: aiohttp.ClientSession, ws_url: str, steps: int, room: Class) -> dict[str, object]:
    """A tab: connect, wait for the screen, step ``steps`` merges; then stay open until told."""
    start = time.perf_counter()
    tab = Tab(await http.ws_connect(ws_url, max_msg_size=0))
    message = await asyncio.wait_for(tab.ws.receive(), timeout=LIMIT)
    first = time.perf_counter() - start
    if message.type == aiohttp.WSMsgType.BINARY:
        tab.seen = ANSI.sub("", message.data.decode("utf-8", errors="replace"))
    await tab.until("⏸ paused")
    ready = time.perf_counter() - start
    step_times = []
    for k in range(1, steps + 1):
        sent = time.perf_counter()
        await tab.ws.send_json(["stdin", "n"])
        await tab.until(f"merge {k}/")
        step_times.append(time.perf_counter() - sent)
    room.one_stepped()
    await room.leave.wait()
    await tab.ws.close()
    return {"first": first, "ready": ready, "steps": step_times}


def session_costs(server: int) -> list[tuple[int, int, int, float]]:
    """Per tab (a direct child of the server): its processes, their summed RSS and PSS in
    bytes, and the CPU seconds they have used (user and system)."""
    sessions = []
    for top in psutil.Process(server).children():
        processes = [top, *top.children(recursive=True)]
        rss = pss = 0
        cpu = 0.0
        for process in processes:
            try:
                with process.oneshot():
                    info, times = process.memory_full_info(), process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            rss += info.rss
            pss += getattr(info, "pss", info.rss)  # PSS is Linux's; elsewhere RSS stands in
            cpu += times.user + times.system
        sessions.append((len(processes), rss, pss, cpu))
    return sessions


def group_members(pgid: int) -> list[int]:
    members = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == pgid:
                members.append(pid)
        except ProcessLookupError:
            pass
    return members


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_listening(port: int, server: subprocess.Popen[bytes]) -> None:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if server.poll() is not None:
            raise RuntimeError("the server exited at start")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("the server never listened")


def stop(server: subprocess.Popen[bytes]) -> bool:
    """Ctrl+C the server; whether it and every app process it started ended by themselves."""
    server.send_signal(signal.SIGINT)
    end = time.monotonic() + 60
    while time.monotonic() < end and (server.poll() is None or len(group_members(server.pid)) > 0):
        time.sleep(0.2)
    clean = server.poll() is not None and not group_members(server.pid)
    if not clean:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    return clean


def spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    ordered = sorted(v * scale for v in values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    cells = (ordered[0], statistics.median(ordered), p90, ordered[-1])
    return "  ".join(f"{v:>8.{digits}f}" for v in cells)


async def run(sessions: int, steps: int, memory_gb: float) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "bpe_tui.cli", "serve", "train", "--port", str(port), "--max-sessions", str(sessions)]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        await wait_listening(port, server)
        idle = psutil.Process(server.pid).memory_info().rss
        room = Class(sessions)
        ws_url = f"ws://127.0.0.1:{port}/ws?width=100&height=30"
        async with aiohttp.ClientSession() as http:
            started = time.perf_counter()
            tabs = [asyncio.create_task(session(http, ws_url, steps, room)) for _ in range(sessions)]
            everyone = asyncio.create_task(room.all_stepped.wait())
            # Every tab open and stepped, or one failed, or out of time: whichever comes first.
            await asyncio.wait([everyone, *tabs], timeout=LIMIT * 2, return_when=asyncio.FIRST_COMPLETED)
            failed = [t for t in tabs if t.done()]
            for task in failed:
                task.result()  # a tab that ended early raises its error here
            if not everyone.done():
                raise RuntimeError(f"only {room.stepped} of {sessions} tabs stepped in {LIMIT * 2:.0f} s")
            all_in = time.perf_counter() - started
            costs = session_costs(server.pid)
            serving = psutil.Process(server.pid).memory_info().rss
            room.leave.set()
            results = await asyncio.wait_for(asyncio.gather(*tabs), timeout=LIMIT)
    finally:
        clean = stop(server)

    first = [float(r["first"]) for r in results]  # type: ignore[arg-type]
    ready = [float(r["ready"]) for r in results]  # type: ignore[arg-type]
    step_times = [s for r in results for s in r["steps"]]  # type: ignore[attr-defined]
    rss = [c[1] for c in costs]
    pss = [c[2] for c in costs]
    cpu = [c[3] for c in costs]
    print(f"bpe-tui serve train (bundled sample): {sessions} tabs at once, {steps} merges each; {os.cpu_count()} cores")
    print(f"{'':<26}{'min':>8}  {'median':>8}  {'p90':>8}  {'max':>8}")
    print(f"{'first frame (s)':<26}{spread(first)}")
    print(f"{'ready to step (s)':<26}{spread(ready)}")
    print(f"{'step n -> merge shown (s)':<26}{spread(step_times)}")
    print(f"{'RSS per session (MB)':<26}{spread(rss, 1 / MB, 1)}")
    print(f"{'PSS per session (MB)':<26}{spread(pss, 1 / MB, 1)}")
    print(f"{'CPU per session (s)':<26}{spread(cpu)}")
    print(f"processes per session: {sorted({c[0] for c in costs})}; sessions measured: {len(costs)}")
    print(f"server RSS: {idle / MB:.0f} MB idle, {serving / MB:.0f} MB with {sessions} tabs; all tabs stepped after {all_in:.1f} s")
    reserve = 1.0  # GB for the system, the server and a desktop
    fits = int((memory_gb - reserve) * 1024 / (max(rss) / MB))
    print(f"{memory_gb:g} GB machine, {reserve:g} GB kept back: {fits} sessions at the largest RSS ({max(rss) / MB:.0f} MB)")
    cores = os.cpu_count() or 1
    print(f"{sessions} tabs opening at once: {sum(cpu):.0f} CPU seconds over {cores} cores, at least {sum(cpu) / cores:.0f} s")
    print("server stopped on Ctrl+C with no app process left" if clean else "the server left processes: killed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--memory-gb", type=float, default=8.0, help="the machine to size for (default 8)")
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.steps, args.memory_gb))


if __name__ == "__main__":
    main()
