"""Does the training screen keep up with a real corpus? Textual's Pilot drives the app.

On ../shared/corpora/en-mix-6m.txt (or --corpus), with the app at 200x50:

- headless: the engine alone pre-tokenizes and does the merges (the baseline);
- load: from app start until the screen shows merge 0 (pre-tokenizing behind a progress bar);
- fast-forward: ``f`` until the screen shows the last merge, against the headless merge time;
- go back: ``g`` to the merge before the last (rebuild and replay), then ``b``;
- key latency while playing at full speed: a key is sent as the terminal would send it and
  timed until the screen has been repainted with its effect (play, then pause).

With ``--occurrences`` the pair-in-the-corpus panel (``o``) is shown throughout.

    python benchmarks/bench_tui.py [--corpus FILE] [--merges 10000] [--presses 20] [--occurrences]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual import events  # noqa: E402

from bpe_tui.app import BpeApp  # noqa: E402
from bpe_tui.train.screen import SPEEDS, TrainScreen  # noqa: E402
from engine import Trainer  # noqa: E402
from engine.train.settings import TrainOptions  # noqa: E402

SPECIAL = ["<|endoftext|>"]
SIZE = (200, 50)


class Painted:
    """Times of the app's screen updates (``App._display`` is where a frame is written)."""

    def __init__(self, app: BpeApp) -> None:
        self.last = 0.0
        original = app._display

        def display(screen, renderable) -> None:
            original(screen, renderable)
            self.last = time.perf_counter()

        app._display = display  # type: ignore[method-assign]

    async def after(self, since: float, condition: Callable[[], bool], limit: float = 60.0) -> float:
        """Seconds from ``since`` until ``condition`` holds and a frame has been painted after."""
        while not condition():
            if time.perf_counter() - since > limit:
                raise TimeoutError("the screen never got there")
            await asyncio.sleep(0.0005)
        seen = time.perf_counter()
        while self.last < seen:
            await asyncio.sleep(0.0005)
        return self.last - since


def send(app: BpeApp, key: str, char: str | None = None) -> float:
    """Send a key the way the terminal driver does; returns the time it was sent."""
    app._driver.send_message(events.Key(key, char))  # type: ignore[union-attr]
    return time.perf_counter()


def headless(corpus: Path, merges: int) -> dict[str, float]:
    t0 = time.perf_counter()
    trainer = Trainer.from_file(corpus, 256 + len(SPECIAL) + merges, SPECIAL)
    t1 = time.perf_counter()
    trainer.run()
    t2 = time.perf_counter()
    trainer.goto(merges - 1)
    t3 = time.perf_counter()
    return {"pre-tokenize": t1 - t0, "merges": t2 - t1, "back one (goto)": t3 - t2}


async def show_occurrences(app: BpeApp, screen: TrainScreen, painted: Painted) -> None:
    """Press ``o`` and wait until the panel has the trainer's sample."""
    await painted.after(send(app, "o", "o"), lambda: screen.snapshot.upcoming is not None)  # type: ignore[union-attr]


async def fast_forward(corpus: Path, merges: int, occurrences: bool) -> dict[str, float]:
    screen = TrainScreen(corpus, TrainOptions(256 + len(SPECIAL) + merges, tuple(SPECIAL)))
    app = BpeApp(screen)
    started = time.perf_counter()
    async with app.run_test(size=SIZE):
        painted = Painted(app)
        shows = lambda k: lambda: screen.snapshot is not None and screen.snapshot.merges_done == k  # noqa: E731
        out = {"load": await painted.after(started, shows(0))}
        if occurrences:
            await show_occurrences(app, screen, painted)
        out["fast-forward"] = await painted.after(send(app, "f", "f"), shows(merges))
        await asyncio.sleep(0.2)
        t = send(app, "g", "g")
        await asyncio.sleep(0.1)
        for ch in str(merges - 1):
            app._driver.send_message(events.Key(ch, ch))  # type: ignore[union-attr]
        send(app, "enter")
        out["go to merge k-1"] = await painted.after(t, shows(merges - 1)) - 0.1
        out["b (one back)"] = await painted.after(send(app, "b", "b"), shows(merges - 2))
        app.exit()
    return out


async def latency(corpus: Path, presses: int, occurrences: bool) -> list[float]:
    screen = TrainScreen(corpus, TrainOptions(40_000, tuple(SPECIAL)))
    app = BpeApp(screen)
    times = []
    async with app.run_test(size=SIZE) as pilot:
        painted = Painted(app)
        await painted.after(time.perf_counter(), lambda: screen.snapshot is not None)
        if occurrences:
            await show_occurrences(app, screen, painted)
        while SPEEDS[screen._speed] is not None:
            await pilot.press("plus")
        for _ in range(presses // 2):
            playing = lambda: screen.playing and "playing" in screen.query_one("StatusLine").activity  # noqa: E731
            times.append(await painted.after(send(app, "space", " "), playing))
            await asyncio.sleep(0.25)  # full speed for a while
            stopped = lambda: "playing" not in screen.query_one("StatusLine").activity  # noqa: E731 (paused, or done)
            times.append(await painted.after(send(app, "space", " "), stopped))
        done = screen.snapshot.merges_done
        app.exit()
    print(f"  (played up to merge {done:,} in {presses // 2} bursts of 0.25 s)")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpora" / "en-mix-6m.txt")
    parser.add_argument("--merges", type=int, default=10_000)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--occurrences", action="store_true", help="with the pair-in-the-corpus panel shown")
    args = parser.parse_args()
    if not args.corpus.exists():
        print(f"skipped: {args.corpus} not found")
        return 0
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    panel = ", pair in the corpus shown" if args.occurrences else ""
    print(f"corpus {args.corpus.name}, {args.merges:,} merges, app at {SIZE[0]}x{SIZE[1]}{panel}, load average {load}")
    base = headless(args.corpus, args.merges)
    for name, seconds in base.items():
        print(f"headless {name:<18} {seconds:7.2f} s")
    tui = asyncio.run(fast_forward(args.corpus, args.merges, args.occurrences))
    for name, seconds in tui.items():
        print(f"app      {name:<18} {seconds:7.2f} s")
    print(f"fast-forward / headless merges: {tui['fast-forward'] / base['merges']:.2f}x")
    times = sorted(asyncio.run(latency(args.corpus, args.presses, args.occurrences)))
    ms = [t * 1000 for t in times]
    print(
        f"key to screen while playing at full speed ({len(ms)} presses): median {statistics.median(ms):.0f} ms, "
        f"p90 {ms[int(len(ms) * 0.9) - 1]:.0f} ms, max {ms[-1]:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
