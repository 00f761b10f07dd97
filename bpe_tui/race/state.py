"""What a race knows: each racer's progress and times, whether their merges agree, the speed-up.

Fed the racers' reports (``race.process``) in arrival order; read by the race screen and the
headless race alike. Times come from the racers' own clocks; ``now`` (the reader's clock)
only carries a racer's elapsed time on between two of its reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from bpe_tui.common.child_process import Report

COUNTING, READY, MERGING, FINISHED, STOPPED, FAILED = "counting", "ready", "merging", "finished", "stopped", "failed"

Merge = tuple[bytes, bytes]
MergeSource = Callable[[Mapping[bytes, int], int, Sequence[str]], Iterator[Merge]]
"""``(word_counts, vocab_size, special_tokens)`` -> each merge as it is found."""


@dataclass(frozen=True)
class Racer:
    """A contestant: a name, where its merges come from, and the clock that times it."""

    name: str
    about: str
    """What it does, in a few words, for the screen."""
    merges: MergeSource
    clock: Callable[[], float] = time.perf_counter
    """Seconds, read in the racer's process (the tests freeze it)."""


@dataclass
class Lane:
    """One racer's side of the race."""

    racer: Racer
    planned: int
    state: str = COUNTING
    counting: float | None = None
    """Seconds spent counting the corpus, once done."""
    merges: list[Merge] = field(default_factory=list)
    merging: float = 0.0
    """Seconds of merging, as of its last report."""
    reported_at: float = 0.0
    """The reader's clock when that report came."""
    problem: str = ""
    """Why it failed, for a ``FAILED`` lane."""

    @property
    def done(self) -> int:
        return len(self.merges)

    @property
    def total(self) -> int:
        """Merges it will make: the planned ones, or as many as it made if it ran out of pairs."""
        return self.done if self.state == FINISHED else self.planned

    def elapsed(self, now: float) -> float:
        """Seconds of merging by ``now``."""
        return self.merging + (max(0.0, now - self.reported_at) if self.state == MERGING else 0.0)

    def rate(self, now: float) -> float | None:
        """Merges per second so far (None before its first merge)."""
        elapsed = self.elapsed(now)
        return self.done / elapsed if self.done and elapsed > 0 else None

    def to_finish(self, now: float) -> float | None:
        """Seconds left at its current rate (None while unknown or once it has stopped)."""
        rate = self.rate(now)
        return (self.total - self.done) / rate if rate and self.state == MERGING else None


@dataclass(frozen=True)
class Mismatch:
    """The first merge on which the two racers differ (None: that racer made no such merge)."""

    index: int
    """1-based merge number."""
    pairs: tuple[Merge | None, Merge | None]


class Race:
    """Two lanes; ``report`` feeds them, the rest reads them."""

    def __init__(self, racers: tuple[Racer, Racer], planned: int) -> None:
        self.lanes = tuple(Lane(racer, planned) for racer in racers)
        self.planned = planned
        self.distinct_pre_tokens: int | None = None
        self.mismatch: Mismatch | None = None
        self.compared = 0
        """Merges both racers have made and that were compared (up to a mismatch)."""

    def report(self, index: int, report: Report, now: float) -> None:
        """Apply racer ``index``'s ``counted``, ``merged`` or ``finished`` report, received at ``now``."""
        lane = self.lanes[index]
        if lane.state == STOPPED:  # sent before the stop, arrived after it: the stop stands
            return
        kind, *rest = report
        if kind == "counted":
            lane.counting, self.distinct_pre_tokens = rest
            lane.state = READY
        elif kind in ("merged", "finished"):
            pairs, lane.merging = rest
            lane.merges.extend(pairs)
            lane.reported_at = now
            lane.state = FINISHED if kind == "finished" else MERGING
            self._compare()

    def fail(self, index: int, problem: str) -> None:
        """Racer ``index`` cannot go on (its process died): ``problem`` says how."""
        lane = self.lanes[index]
        lane.state, lane.problem = FAILED, problem

    @property
    def ready(self) -> bool:
        """Every racer has counted the corpus: time for the start."""
        return all(lane.state == READY for lane in self.lanes)

    def start(self, now: float) -> None:
        for lane in self.lanes:
            lane.state, lane.reported_at = MERGING, now

    def stop(self, index: int, now: float) -> None:
        """Racer ``index`` is stopped at ``now``, unless it has already finished or failed."""
        lane = self.lanes[index]
        if lane.state not in (FINISHED, FAILED):
            lane.merging = lane.elapsed(now)
            lane.state = STOPPED

    @property
    def over(self) -> bool:
        return all(lane.state in (FINISHED, STOPPED, FAILED) for lane in self.lanes)

    def _compare(self) -> None:
        """Compare the merges both have made since the last look; note the first difference."""
        a, b = self.lanes
        if self.mismatch is not None:
            return
        both = min(a.done, b.done)
        for i in range(self.compared, both):
            if a.merges[i] != b.merges[i]:
                self.mismatch = Mismatch(i + 1, (a.merges[i], b.merges[i]))
                return
        self.compared = both
        # One ran out of pairs where the other still merged: the next merge is a difference.
        for short, long in ((a, b), (b, a)):
            if short.state == FINISHED and long.done > short.done:
                pairs = (None, long.merges[short.done]) if short is a else (long.merges[short.done], None)
                self.mismatch = Mismatch(short.done + 1, pairs)

    @property
    def agreed(self) -> bool:
        """Both finished with the same merges."""
        return self.mismatch is None and all(lane.state == FINISHED for lane in self.lanes)

    def speedup(self, now: float) -> tuple[float, Lane, Lane] | None:
        """Once a racer has finished: how many times faster the faster one merges, and the
        two lanes (faster first). Final once both have finished the same merges."""
        if not any(lane.state == FINISHED for lane in self.lanes):
            return None
        rates = [rate for lane in self.lanes if (rate := lane.rate(now)) is not None]
        if len(rates) < len(self.lanes):
            return None
        fast, slow = sorted(range(2), key=lambda i: -rates[i])
        return rates[fast] / rates[slow], self.lanes[fast], self.lanes[slow]


def show_rate(rate: float | None) -> str:
    """Merges per second, to about three figures."""
    if rate is None:
        return "?"
    return f"{rate:,.0f}/s" if rate >= 100 else f"{rate:.3g}/s"


def show_speedup(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 10 else f"{ratio:.1f}×"
