"""The training app on the bundled sample, and a way to wait for its trainer thread."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from textual.pilot import Pilot

from bpe_tui.app import BpeApp
from bpe_tui.common.corpus import sample_corpus
from bpe_tui.train.screen import TrainScreen
from engine.train.settings import TrainOptions

SAMPLE_MERGES = 1000 - 256 - 1


def train_app(out: str | None = None, resume: tuple[str, list[tuple[bytes, bytes]]] | None = None) -> tuple[BpeApp, TrainScreen]:
    with sample_corpus() as path:  # a real file once installed; the app reads it at once
        screen = TrainScreen(path, TrainOptions(1000, ("<|endoftext|>",), workers=1), out=out, label="sample.txt", resume=resume)
    return BpeApp(screen), screen


async def wait_until(pilot: Pilot, condition: Callable[[], bool], limit: float = 20.0) -> None:
    """Let the app run until ``condition`` holds (the trainer works in its own thread)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while not condition():
        assert loop.time() < end, "the training screen did not get there"
        await pilot.pause(0.02)
    await pilot.pause()


async def at_merge(pilot: Pilot, screen: TrainScreen, k: int) -> None:
    """Wait until the screen shows merge ``k``, the trainer has gone idle and the plot (which
    redraws at its own pace) shows it too."""
    await wait_until(
        pilot,
        lambda: (
            screen.snapshot is not None
            and screen.snapshot.characters is not None  # counted just after the first snapshot
            and screen.snapshot.merges_done == k
            and not screen.playing
            and all(plot.drawn_merges == k for plot in screen.query("GrowthPlot"))
        ),
    )


ZH = Path(__file__).parent / "fixtures" / "zh-xiyouji-9k.txt"
ZH_MERGES = 400 - 256 - 1


def zh_app(follow: Sequence[str] = ()) -> tuple[BpeApp, TrainScreen]:
    """The training screen on 9 KB of 西游记 (Chinese: every character three bytes)."""
    screen = TrainScreen(ZH, TrainOptions(400, ("<|endoftext|>",), workers=1), label=ZH.name, follow=follow)
    return BpeApp(screen), screen


TOY = "toy-low-lower.txt"
TOY_MERGES = 40 - 11
"""Classic BPE on the toy corpus at vocab size 40: 11 starting symbols (10 letters and </w>)."""


def classic_app(out: str | None = None, words: str = "whitespace") -> tuple[BpeApp, TrainScreen]:
    """The training screen on classic BPE with ``</w>``, on the low/lower/widest/newest toy."""
    with sample_corpus(TOY) as path:
        screen = TrainScreen(path, TrainOptions(40, (), classic=words), out=out, label=TOY)
    return BpeApp(screen), screen


def after(*keys: str, merge: int) -> Callable[[Pilot], Awaitable[None]]:
    """A snapshot's ``run_before``: from merge 0, press ``keys`` and wait until the screen
    shows ``merge`` (and, with the pair-in-the-corpus panel shown, its sample)."""

    async def run_before(pilot: Pilot) -> None:
        screen = pilot.app.screen
        await at_merge(pilot, screen, 0)
        for key in keys:
            await pilot.press(key)
        await at_merge(pilot, screen, merge)
        if screen.has_class("-occurrences"):
            await wait_until(pilot, lambda: screen.snapshot.upcoming is not None)

    return run_before
