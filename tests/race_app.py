"""Races on the bundled sample, racers of the tests' own, and clocks that make times exact.

Racers run in processes of their own, so what they are made of must be importable there:
these live at module level.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from textual.pilot import Pilot

from bpe_tui.app import BpeApp
from bpe_tui.common.corpus import sample_corpus
from bpe_tui.race.process import OPTIMIZED, REFERENCE, optimized_merges
from bpe_tui.race.screen import RaceScreen
from bpe_tui.race.state import Merge, Racer
from engine import reference_merges
from engine.train.settings import TrainOptions
from tests.train_app import wait_until

VOCAB = 400
MERGES = VOCAB - 256 - 1


@dataclass
class Ticks:
    """A clock that moves ``step`` seconds each time it is read: a racer's times then depend
    only on the work it did, never on the machine."""

    step: float
    now: float = 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def frozen() -> float:
    """The screen's clock in snapshots: elapsed times are exactly what the racers reported."""
    return 0.0


def swapped_merges(word_counts: Mapping[bytes, int], vocab_size: int, special_tokens: Sequence[str]) -> Iterator[Merge]:
    """The optimized trainer's merges with merges 5 and 6 in the wrong order."""
    merges = list(optimized_merges(word_counts, vocab_size, special_tokens))
    merges[4], merges[5] = merges[5], merges[4]
    yield from merges


def dawdling_merges(word_counts: Mapping[bytes, int], vocab_size: int, special_tokens: Sequence[str]) -> Iterator[Merge]:
    """The reference merges, a twentieth of a second apart: still running when a test looks."""
    for merge in reference_merges(word_counts, vocab_size, special_tokens):
        time.sleep(0.05)
        yield merge


def crashing_merges(word_counts: Mapping[bytes, int], vocab_size: int, special_tokens: Sequence[str]) -> Iterator[Merge]:
    """A racer with a bug: it raises once it starts."""
    raise RuntimeError("a bug in the racer")
    yield from ()


TICKING = (
    Racer(REFERENCE.name, REFERENCE.about, reference_merges, Ticks(0.004)),
    Racer(OPTIMIZED.name, OPTIMIZED.about, optimized_merges, Ticks(0.00001)),
)
"""The two real racers, timed by ticking clocks: 4 ms and 10 µs a merge, a 400× speed-up."""
SWAPPED = (TICKING[0], Racer(OPTIMIZED.name, OPTIMIZED.about, swapped_merges, Ticks(0.00001)))
DAWDLING = (Racer(REFERENCE.name, REFERENCE.about, dawdling_merges), OPTIMIZED)
CRASHING = (REFERENCE, Racer(OPTIMIZED.name, OPTIMIZED.about, crashing_merges))


def race_app(
    racers: tuple[Racer, Racer] = (REFERENCE, OPTIMIZED), clock: Callable[[], float] = time.perf_counter
) -> tuple[BpeApp, RaceScreen]:
    with sample_corpus() as path:
        screen = RaceScreen([str(path)], TrainOptions(VOCAB, ("<|endoftext|>",), workers=1), "sample.txt", racers, clock)
    return BpeApp(screen), screen


async def race_over(pilot: Pilot, screen: RaceScreen) -> None:
    """Wait until both racers have finished (or stopped) and the screen shows it."""
    await wait_until(pilot, lambda: screen.race.over, limit=60)
    await pilot.pause(0.1)


HALT = 50


def halting_merges(word_counts: Mapping[bytes, int], vocab_size: int, special_tokens: Sequence[str]) -> Iterator[Merge]:
    """The first ``HALT`` reference merges, then a wait longer than any test: a race caught
    with the fast racer done and the slow one mid-way."""
    for n, merge in enumerate(reference_merges(word_counts, vocab_size, special_tokens)):
        if n == HALT:
            time.sleep(3600)
        yield merge


HALTING = (Racer(REFERENCE.name, REFERENCE.about, halting_merges, Ticks(0.05)), TICKING[1])
"""A reference reporting every merge (each 50 ms by its clock) that stops after ``HALT``."""
