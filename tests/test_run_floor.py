"""A plain run's floor: the pairs a merge makes below it are given up, and the merges, and
whatever reads the pairs afterwards, are those of a run that kept every pair."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Trainer, train_reference
from engine.corpus.word_table import WordTable
from engine.train._trainer_core import Core
from engine.train.trainer import FLOOR_FROM, run_floor

BASE = [bytes([i]) for i in range(256)] + [b"<|endoftext|>"]
counts_strategy = st.dictionaries(st.binary(max_size=12), st.integers(1, 40), min_size=1, max_size=40)


def cores(counts: dict[bytes, int]) -> tuple[Core, Core]:
    table = WordTable.from_counts(counts)
    return Core(table.words, table.ends, table.counts, BASE), Core(table.words, table.ends, table.counts, BASE)


@settings(max_examples=150)
@given(counts=counts_strategy, floors=st.lists(st.integers(0, 60), min_size=1, max_size=4), n=st.integers(1, 30))
def test_a_run_with_floors_merges_as_one_without(counts, floors, n):
    """Floors raised chunk by chunk, some far above every count (each such guess makes the
    core count its pairs again lower), give the merges a run without one gives."""
    floored, plain = cores(counts)
    for floor in floors:
        assert floored.run(n, floor) == plain.run(n)


@settings(max_examples=150)
@given(counts=counts_strategy, floor=st.integers(1, 60), n=st.integers(0, 30))
def test_after_a_floored_run_every_reader_sees_every_pair(counts, floor, n):
    floored, plain = cores(counts)
    floored.run(n, floor)
    plain.run(n)
    assert floored.pair_counter() == plain.pair_counter()
    assert floored.live_pairs == plain.live_pairs
    assert floored.top_pairs(8) == plain.top_pairs(8)
    for pair in list(plain.pair_counter())[:5]:
        assert floored.pair_positions(*pair, 50)[1:] == plain.pair_positions(*pair, 50)[1:]  # live ones, in order
    next_step, plain_next = floored.step(4), plain.step(4)  # the same pair, count and ties
    assert (next_step and next_step[:4]) == (plain_next and plain_next[:4])
    assert floored.run(n) == plain.run(n)


def test_a_trainer_run_gives_up_pairs_and_keeps_the_reference_merges():
    """Enough merges for a floor (``run_floor`` above 0 from ``FLOOR_FROM`` on): the merges
    are the reference's, and the core, given up pairs and all, tells the whole state after."""
    words = [bytes([97 + i % 7, 97 + i % 11, 97 + i % 13, 97 + i % 5, 97 + i % 3]) * (1 + i % 4) for i in range(3000)]
    counts = {w: 1 + (i * 7919) % 500 for i, w in enumerate(dict.fromkeys(words))}
    trainer = Trainer(counts, 257 + FLOOR_FROM + 200)
    trainer.run(until=FLOOR_FROM + 64)
    assert run_floor(trainer.merge_counts, trainer.merges_planned) > 0
    trainer.run()
    reference_merges = train_reference(counts, trainer.vocab_size)[1]
    assert trainer.merges == reference_merges
    assert trainer.pair_count == len(trainer.pair_counter) > 0


def test_run_floor_waits_for_enough_merges_and_falls_with_the_counts():
    assert run_floor([1000] * (FLOOR_FROM - 1), 10_000) == 0
    falling = [int(1e6 / (k + 1)) for k in range(FLOOR_FROM)]
    assert 0 < run_floor(falling, 10_000) < falling[-1] * FLOOR_FROM / 10_000  # below the power law's own guess
    assert run_floor(falling, len(falling)) == 0  # nothing left to plan for
