"""The race's bookkeeping, fed reports by hand: agreement, mismatches, rates and speed-up."""

from __future__ import annotations

import pytest

from bpe_tui.common.durations import show_seconds
from bpe_tui.race.process import RACERS
from bpe_tui.race.state import FINISHED, MERGING, READY, STOPPED, Race, show_speedup

M = [(b"h", b"e"), (b" ", b"t"), (b" t", b"he"), (b"a", b"n")]


def started(planned: int = 4) -> Race:
    race = Race(RACERS, planned)
    race.report(0, ("counted", 0.02, 100), now=1.0)
    assert not race.ready
    race.report(1, ("counted", 0.01, 100), now=1.0)
    assert race.ready and race.lanes[0].state == READY
    race.start(now=1.0)
    return race


def test_merges_are_compared_as_they_arrive_and_the_speedup_follows_the_rates():
    race = started()
    race.report(1, ("finished", M, 0.001), now=1.1)
    assert race.compared == 0 and race.mismatch is None
    race.report(0, ("merged", M[:2], 0.5), now=1.5)
    assert race.compared == 2 and not race.agreed
    slow, fast = race.lanes
    assert slow.state == MERGING and fast.state == FINISHED
    # between reports the slow one's time goes on by the reader's clock
    assert slow.elapsed(2.0) == pytest.approx(1.0) and slow.rate(2.0) == pytest.approx(2.0)
    assert slow.to_finish(2.0) == pytest.approx(1.0)
    ratio, first, second = race.speedup(2.0)
    assert (first, second) == (fast, slow) and ratio == pytest.approx(4000 / 2)
    race.report(0, ("finished", M[2:], 2.0), now=3.0)
    assert race.agreed and race.compared == 4 and race.over
    assert slow.elapsed(9.0) == 2.0  # finished: no more ticking
    assert race.speedup(9.0)[0] == pytest.approx(2000)


def test_the_first_difference_is_kept_with_both_pairs():
    race = started()
    race.report(0, ("merged", M[:3], 0.3), now=1.3)
    race.report(1, ("merged", [M[0], M[2], M[1]], 0.001), now=1.3)
    assert race.mismatch.index == 2 and race.mismatch.pairs == (M[1], M[2])
    race.report(1, ("finished", [M[3]], 0.001), now=1.3)
    assert race.mismatch.index == 2 and not race.agreed


def test_running_out_of_pairs_early_is_a_difference():
    race = started()
    race.report(0, ("finished", M[:3], 0.3), now=1.3)
    race.report(1, ("finished", M, 0.001), now=1.3)
    assert race.mismatch.index == 4 and race.mismatch.pairs == (None, M[3])
    assert race.lanes[0].total == 3


def test_a_stopped_racer_keeps_the_time_it_ran():
    race = started()
    race.report(0, ("merged", M[:1], 0.25), now=1.25)
    race.stop(0, now=2.0)
    lane = race.lanes[0]
    assert lane.state == STOPPED and lane.elapsed(50.0) == pytest.approx(1.0)
    assert lane.to_finish(50.0) is None and not race.over
    race.report(1, ("finished", M, 0.001), now=2.0)
    assert race.over and not race.agreed and race.speedup(3.0)[0] == pytest.approx(4000)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(None, "?"), (0.0027, "2.7 ms"), (0.05, "50 ms"), (2.094, "2.09 s"), (185, "3 min 05 s"), (7300, "2 h 01 min")],
)
def test_times_read_well(seconds, shown):
    assert show_seconds(seconds) == shown


def test_speedups_read_well():
    assert (show_speedup(1.04), show_speedup(770.3), show_speedup(12345.6)) == ("1.0×", "770×", "12,346×")


def test_a_report_sent_before_a_stop_and_read_after_it_leaves_the_lane_stopped():
    race = started()
    race.report(0, ("merged", M[:1], 0.5), now=1.5)
    race.stop(0, now=2.0)
    race.report(0, ("merged", M[1:2], 0.9), now=2.1)  # in the pipe when the stop came
    lane = race.lanes[0]
    assert lane.state == STOPPED and lane.merges == M[:1] and lane.merging == pytest.approx(1.0)
