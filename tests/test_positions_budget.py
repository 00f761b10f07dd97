"""Training within a memory bound: a run whose pair_positions lists hold at most a budget of
bytes keeps the other pairs as counts and finds their positions again when one is to be
merged, with the merges, and whatever reads the pairs, of a run that kept every list; and a
corpus laid out a part at a time (``Core.extend``, a counts file read in parts) is the
corpus laid out whole."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Trainer
from engine.corpus.counts_file import load_counts, open_counts
from engine.corpus.word_table import WordTable
from engine.errors import SettingsError
from engine.train._trainer_core import Core
from engine.train.trainer import MIN_POSITIONS, RUN_RESERVE
from tests.conftest import fixture_file

SPECIAL = "<|endoftext|>"

BASE = [bytes([i]) for i in range(256)] + [SPECIAL.encode()]
counts_strategy = st.dictionaries(
    st.binary(min_size=0, max_size=30).map(lambda b: bytes(97 + x % 4 for x in b)), st.integers(1, 60), min_size=1, max_size=40
)


def core(table: WordTable) -> Core:
    return Core(table.words, table.ends, table.counts, BASE)


@settings(max_examples=150)
@given(counts=counts_strategy, budget=st.sampled_from([1, 9, 24, 80, 400]), floor=st.sampled_from([0, 0, 6]), n=st.integers(1, 25))
def test_a_run_within_a_budget_merges_as_one_without(counts, budget, floor, n):
    """Budgets from a byte (every pair but the one merged kept as a count) up: each merge
    of a pair kept as a count finds its positions again, and the merges do not change."""
    table = WordTable.from_counts(counts)
    bounded, plain = core(table), core(table)
    for _ in range(3):
        assert bounded.run(n, floor, budget) == plain.run(n)
    assert bounded.pair_counter() == plain.pair_counter()
    assert bounded.top_pairs(8) == plain.top_pairs(8)
    for pair in list(plain.pair_counter())[:6]:  # read, a pair kept as a count has its positions again
        live = [p for p in bounded.pair_positions(*pair, 10_000)[2] if p[2]]
        assert live == [p for p in plain.pair_positions(*pair, 10_000)[2] if p[2]]
    assert bounded.run(100) == plain.run(100)


def test_a_small_budget_finds_positions_again_and_keeps_the_reference_merges(reference_merges):
    trainer = Trainer.from_files(fixture_file("corpus.en"), 500, [SPECIAL])
    trainer.positions_budget = 4096
    trainer.run()
    assert trainer.merges == reference_merges
    assert trainer.positions_found_again > 0


@settings(max_examples=60)
@given(counts=counts_strategy, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_a_corpus_laid_out_in_parts_is_the_corpus_laid_out_whole(counts, cuts):
    items = list(counts.items())
    bounds = [0, *sorted(min(c, len(items)) for c in cuts), len(items)]
    parts = [WordTable.from_counts(dict(items[a:b])) for a, b in zip(bounds, bounds[1:], strict=False)]
    whole, pieced = core(WordTable.from_counts(counts)), core(parts[0])
    for part in parts[1:]:
        pieced.extend(part.words, part.ends, part.counts)
    assert pieced.table() == whole.table() and pieced.words == whole.words == len(items)
    assert pieced.run(30) == whole.run(30)
    with pytest.raises(RuntimeError, match="before the pairs are counted"):
        pieced.extend(b"", b"", b"")


@pytest.mark.parametrize("chunk", [1, 7, 1 << 18])
def test_a_counts_file_read_in_parts_holds_what_it_holds_read_whole(tmp_path, chunk):
    path = tmp_path / "c.counts"
    Trainer.from_files(fixture_file("corpus.en"), 300, [SPECIAL], save_counts=path)
    whole = load_counts(path)
    stream = open_counts(path, chunk)
    assert (stream.summary, stream.pattern, stream.special_tokens) == (whole.summary, whole.pattern, whole.special_tokens)
    parts = list(stream.tables)
    assert len(parts) == -(-stream.pretokens // chunk) and max(map(len, parts)) <= chunk
    assert WordTable.merge(parts).counter() == whole.table.counter()


def test_a_memory_bound_leaves_the_lists_what_the_layout_leaves():
    trainer = Trainer.from_files(fixture_file("corpus.en"), 300, [SPECIAL])
    layout = sum(trainer.memory()[part] for part in ("tokens", "token marks", "large word counts", "word starts"))
    reserve = RUN_RESERVE + layout // 32
    trainer.bound_memory(layout + reserve + MIN_POSITIONS + 5)
    assert trainer.positions_budget == MIN_POSITIONS + 5
    with pytest.raises(SettingsError, match=rf"too little to train in: the words laid out take {layout:,} bytes; give at least [\d,]+ MB$"):
        trainer.bound_memory(layout + reserve)
