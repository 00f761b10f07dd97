"""How many browser tabs does ``bpe-tui serve`` hold? A class connecting at once, measured.

Serves ``bpe-tui train`` (the bundled sample, or the corpus named) on a free 127.0.0.1 port,
then opens ``--sessions`` websockets at once, each speaking textual-serve's protocol as a
browser tab does (``["stdin", key]`` up, the terminal's bytes down). Each tab waits for the
training screen, then steps ``--steps`` merges with ``n``, each once the last has shown.

- first frame: from asking for the websocket to the first bytes of the app's screen;
- drawn: until the screen's footer shows (``q quit``), its panels laid out;
- ready: until the panels show the corpus read (``⏸ paused``), when keys start to step;
- step: from sending ``n`` until the screen shows the new merge;
- memory, with every tab open and stepped: a tab is its app and its trainer, both forked
  from the warm parent (``bpe_tui/serve/warm.py``), which with multiprocessing's resource
  tracker serves the whole class. RSS and PSS of each app and each trainer; PSS shares each
  page out among the processes mapping it, so the pages a tab still shares with the warm
  parent count once across the class. A tab's share: the PSS of every process of the class
  (apps, trainers, warm parent, tracker) over the tabs;
- CPU: the seconds the apps and trainers used to start and step, and the server's own while
  the class connected (it relays every tab's screen), which is what makes a class connecting
  at once wait on a machine with few cores.

Only loopback; every wait is bounded. Once every tab has closed, the warm parent must have
no process left; then the server is stopped (Ctrl+C, as a teacher would) and its process
group checked empty before the table is printed.

    python benchmarks/bench_serve.py [CORPUS ...] [--sessions 30] [--steps 3] [--memory-gb 8]
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
MIB = 1024 * 1024


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
    await tab.until("quit")
    drawn = time.perf_counter() - start
    await tab.until("⏸ paused")
    ready = time.perf_counter() - start
    step_times = []
    for k in range(1, steps + 1):
        sent = time.perf_counter()
        await tab.ws.send_json(["stdin", "n"])
        await tab.until(f"merge {k}/")
        step_times.append(time.perf_counter() - sent)
    room.one_stepped()
    while not room.leave.is_set():  # reading, as a browser does, answers the server's heartbeat
        try:
            message = await tab.ws.receive(timeout=0.5)
        except asyncio.TimeoutError:
            continue
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            raise RuntimeError("the server closed a tab that was open")
    await tab.ws.close()
    return {"first": first, "drawn": drawn, "ready": ready, "steps": step_times}


class Cost:
    """One process's RSS and PSS (bytes) and the CPU seconds it has used."""

    def __init__(self, process: psutil.Process) -> None:
        with process.oneshot():
            info, times = process.memory_full_info(), process.cpu_times()
        self.rss, self.pss = info.rss, getattr(info, "pss", info.rss)  # PSS is Linux's; elsewhere RSS stands in
        self.cpu = times.user + times.system


def warm_parent(server: int) -> psutil.Process:
    """The server's child that forks the tabs (the other is the resource tracker)."""
    return next(p for p in psutil.Process(server).children() if "forkserver" in " ".join(p.cmdline()))


def class_costs(server: int) -> tuple[list[Cost], list[Cost], Cost, Cost]:
    """The apps, the trainers, and what serves the whole class: the warm parent, and the
    resource tracker (the server's other child). An app reads its tab on standard input, a
    pipe; a trainer's is /dev/null."""
    apps: list[Cost] = []
    trainers: list[Cost] = []
    parent = warm_parent(server)
    for process in parent.children():
        (apps if os.readlink(f"/proc/{process.pid}/fd/0").startswith("pipe:") else trainers).append(Cost(process))
    tracker = next(p for p in psutil.Process(server).children() if p.pid != parent.pid)
    return apps, trainers, Cost(parent), Cost(tracker)


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


async def warm(server: int) -> None:
    """Until the warm parent has loaded the app and counted the corpus (its CPU time stands
    still): a class arriving after the teacher starts the server finds it so."""
    end, spent = time.monotonic() + LIMIT, -1.0
    while time.monotonic() < end:
        try:
            now = Cost(warm_parent(server)).cpu
        except StopIteration:  # not started yet
            now = -1.0
        if now >= 0 and now == spent:
            return
        spent = now
        await asyncio.sleep(0.5)
    raise RuntimeError("the warm parent never settled")


async def run(sessions: int, steps: int, memory_gb: float, corpus: list[str]) -> None:
    load = os.getloadavg()
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "bpe_tui.cli", "serve", "train", *corpus, "--port", str(port), "--max-sessions", str(sessions)]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        await wait_listening(port, server)
        idle = psutil.Process(server.pid).memory_info().rss
        await warm(server.pid)
        server_cpu = Cost(psutil.Process(server.pid)).cpu
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
            apps, trainers, warm_cost, tracker_cost = class_costs(server.pid)
            serving = Cost(psutil.Process(server.pid))
            room.leave.set()
            results = await asyncio.wait_for(asyncio.gather(*tabs), timeout=LIMIT)
            closed = time.perf_counter()
            parent = warm_parent(server.pid)
            while parent.children() and time.perf_counter() - closed < LIMIT:
                await asyncio.sleep(0.1)
            left = len(parent.children())
            emptied = time.perf_counter() - closed
    finally:
        clean = stop(server)

    first = [float(r["first"]) for r in results]  # type: ignore[arg-type]
    drawn = [float(r["drawn"]) for r in results]  # type: ignore[arg-type]
    ready = [float(r["ready"]) for r in results]  # type: ignore[arg-type]
    step_times = [s for r in results for s in r["steps"]]  # type: ignore[attr-defined]
    everything = [*apps, *trainers, warm_cost, tracker_cost]
    share = sum(c.pss for c in everything) / len(apps)
    served = " ".join(corpus) or "(bundled sample)"
    print(f"bpe-tui serve train {served}: {sessions} tabs at once, {steps} merges each; {os.cpu_count()} cores")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in load)}")
    print(f"{'':<26}{'min':>8}  {'median':>8}  {'p90':>8}  {'max':>8}")
    print(f"{'first frame (s)':<26}{spread(first)}")
    print(f"{'screen drawn (s)':<26}{spread(drawn)}")
    print(f"{'ready to step (s)':<26}{spread(ready)}")
    print(f"{'step n -> merge shown (s)':<26}{spread(step_times)}")
    for name, costs in (("an app", apps), ("a trainer", trainers)):
        print(f"{f'RSS of {name} (MiB)':<26}{spread([c.rss for c in costs], 1 / MIB, 1)}")
        print(f"{f'PSS of {name} (MiB)':<26}{spread([c.pss for c in costs], 1 / MIB, 1)}")
        print(f"{f'CPU of {name} (s)':<26}{spread([c.cpu for c in costs])}")
    print(f"processes: {len(apps)} apps, {len(trainers)} trainers, the warm parent and the resource tracker")
    print(
        f"a tab's share of the class's PSS: {share / MIB:.1f} MiB (the warm parent's PSS {warm_cost.pss / MIB:.1f} MiB, "
        f"RSS {warm_cost.rss / MIB:.0f} MiB; the resource tracker's PSS {tracker_cost.pss / MIB:.1f} MiB)"
    )
    relayed = serving.cpu - server_cpu
    print(f"server: RSS {idle / MIB:.0f} MiB idle, {serving.rss / MIB:.0f} MiB with {sessions} tabs; {relayed:.1f} CPU seconds for them")
    print(f"all tabs stepped after {all_in:.1f} s; once closed, {left} processes left under the warm parent after {emptied:.1f} s")
    reserve = 1.0  # GB for the system, the server and a desktop
    fits = int((memory_gb - reserve) * 1024 / (share / MIB))
    print(f"{memory_gb:g} GB machine, {reserve:g} GB kept back: {fits} tabs at {share / MIB:.1f} MiB of PSS each")
    cores = os.cpu_count() or 1
    cpu = sum(c.cpu for c in apps + trainers) + serving.cpu - server_cpu
    print(
        f"{sessions} tabs opening at once: {cpu:.0f} CPU seconds (apps, trainers, server) over {cores} cores, at least {cpu / cores:.1f} s"
    )
    print("server stopped on Ctrl+C with no process left" if clean else "the server left processes: killed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="*", help="what serve train trains on (default: the bundled sample)")
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--memory-gb", type=float, default=8.0, help="the machine to size for (default 8)")
    args = parser.parse_args()
    asyncio.run(run(args.sessions, args.steps, args.memory_gb, args.corpus))


if __name__ == "__main__":
    main()
