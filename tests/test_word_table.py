"""The packed word table the trainer keeps instead of a dict, and the core built from it."""

from __future__ import annotations

import gc
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Trainer, train_reference
from engine.corpus.word_table import TableParts, WordTable
from engine.train._trainer_core import Core

words = st.binary(min_size=1, max_size=6)
small = st.integers(1, 5)
huge = st.integers(2**31, 2**40)  # past int32


@settings(max_examples=150)
@given(counts=st.dictionaries(st.binary(max_size=8), st.integers(0, 2**63 - 1), max_size=30))
def test_table_holds_the_counts_in_order(counts):
    table = WordTable.from_counts(counts)
    assert list(table.items()) == list(counts.items()) and len(table) == len(counts)
    assert table.counter() == counts


@settings(max_examples=150)
@given(
    first=st.dictionaries(st.binary(max_size=4), st.integers(0, 2**40), max_size=30),
    second=st.dictionaries(st.binary(max_size=4), st.integers(0, 2**40), max_size=30),
)
def test_sorted_tables_merge_into_their_sum_in_order(first, second):
    merged = WordTable.sorted(first).merged(WordTable.sorted(second))
    total = {w: first.get(w, 0) + second.get(w, 0) for w in first.keys() | second.keys()}
    assert list(merged.items()) == sorted(total.items())
    assert merged == WordTable.sorted(total)
    assert WordTable.from_counts(first).by_word() == WordTable.sorted(first)
    assert merged.by_word() is merged


@settings(max_examples=150)
@given(tables=st.lists(st.dictionaries(st.binary(max_size=4), st.integers(0, 2**40), max_size=20), max_size=12))
def test_many_sorted_tables_merge_at_once(tables):
    """A k-way merge (as counting's runs on disk are joined) sums them all; empty tables and
    words that are prefixes of others (b"", b"a", b"ab") keep their order."""
    merged = WordTable.merge([WordTable.sorted(t) for t in tables])
    total: dict[bytes, int] = {}
    for table in tables:
        for word, count in table.items():
            total[word] = total.get(word, 0) + count
    assert list(merged.items()) == sorted(total.items())


@pytest.mark.parametrize(
    ("words", "ends", "counts"),
    [
        (b"ba", [1, 2], [1, 1]),  # b before a: not sorted
        (b"aa", [1, 2], [1, 1]),  # a twice
        (b"ab", [1, 3], [1, 1]),  # ends past the words
        (b"ab", [2, 1], [1, 1]),  # ends going back
        (b"ab", [1, 2], [1]),  # a count short
    ],
)
def test_merge_refuses_a_table_that_is_not_sorted_or_whole(words, ends, counts):
    table = WordTable(words, array("q", ends), array("q", counts))
    with pytest.raises(ValueError):
        WordTable.merge([WordTable.sorted({b"a": 1}), table])


@settings(max_examples=100)
@given(counts=st.dictionaries(words, st.one_of(small, huge), min_size=1, max_size=12), extra=st.integers(0, 30))
def test_counts_past_int32_train_like_the_reference(counts, extra):
    trainer = Trainer(counts, 256 + extra)
    trainer.run()
    assert trainer.merges == train_reference(counts, 256 + extra)[1]
    assert trainer.corpus_bytes == sum(len(w) * c for w, c in counts.items())


def test_words_and_cells_outlive_the_callers_dict():
    counts = {b" the": 7, b"cat": 3, b" sat": 3, b"on": 1}
    expected = dict(counts)
    trainer = Trainer(counts, 262)
    del counts
    gc.collect()
    trainer.run()
    assert {w.text: w.count for w in trainer.words(10)} == expected
    for i, (word, count) in enumerate(expected.items()):
        cells = trainer.word_cells(i)
        assert (cells.text, cells.count) == (word, count)
        assert b"".join(trainer.token_bytes(c.token) for c in cells.cells) == word


@pytest.mark.parametrize("big", [0, 2**40])
def test_memory_counts_a_byte_a_position_and_only_large_counts_apart(big):
    counts = {b" the": 7, b"cat": 3, b"": 2, b"dog": big}
    trainer = Trainer(counts, 300)
    trainer.run()
    memory = trainer.memory()
    positions = sum(map(len, counts)) + len(counts) + 1  # a separator before each word and after the last
    assert memory["tokens"] == positions  # a merged token's id in its first two cells
    assert memory["token marks"] == 16 * ((positions + 63) // 64)  # two bits a position, 64 at a time
    assert (memory["large word counts"] > 0) == (big > 0)  # the others are in their separators
    assert all(isinstance(v, int) and v >= 0 for v in memory.values()) and memory["pair records"] > 0
    assert [trainer.word_cells(i).count for i in range(len(counts))] == list(counts.values())


@settings(max_examples=80)
@given(
    counts=st.dictionaries(st.binary(max_size=10), st.one_of(small, st.integers(250, 70_000), huge), min_size=1, max_size=14),
    narrow=st.integers(257, 290),
)
def test_cells_widened_in_the_middle_of_a_run_change_nothing(counts, narrow):
    """A core whose cells of a byte widen to 4 once a merge makes an id past ``narrow`` (taking
    back into their separators the counts from 255 up kept aside) merges, splits and gives back
    its words as one that never widens."""
    table = WordTable.from_counts(counts)
    base = [bytes([i]) for i in range(256)] + [b"<|endoftext|>"]
    cores = [Core(table.words, table.ends, table.counts, base, narrow), Core(table.words, table.ends, table.counts, base)]
    merges = cores[0].run(60)
    assert merges == cores[1].run(60)
    for core in cores:
        assert core.table() == (table.words, table.ends.tobytes(), table.counts.tobytes())
    for i in range(len(counts)):
        assert cores[0].cells(i) == cores[1].cells(i)
    widened = cores[0].memory()["tokens"] == 4 * cores[1].memory()["tokens"]
    assert widened == (257 + len(merges) - 1 >= narrow)  # the id of the last merge


def test_core_refuses_buffers_that_do_not_describe_words():
    base = [bytes([i]) for i in range(256)]
    with pytest.raises(ValueError, match="one each per word"):
        Core(b"ab", array("q", [1, 2]), array("q", [1]), base)
    with pytest.raises(ValueError, match="one each per word"):
        Core(b"ab", array("q", [1]), array("q", [1]), base)  # ends short of the words
    with pytest.raises(ValueError, match="go back"):
        Core(b"ab", array("q", [2, 1, 2]), array("q", [1, 1, 1]), base)
    with pytest.raises(ValueError, match="negative"):
        Core(b"ab", array("q", [2]), array("q", [-1]), base)


@settings(max_examples=100)
@given(counts=st.dictionaries(st.binary(max_size=6), st.one_of(small, huge), min_size=1, max_size=12), merges=st.integers(0, 20))
def test_core_gives_back_the_words_it_was_built_from(counts, merges):
    """Whatever the merges so far, the core's table is its input, and a core built from it
    starts where the first did."""
    table = WordTable.from_counts(counts)
    base = [bytes([i]) for i in range(256)]
    core = Core(table.words, table.ends, table.counts, base)
    core.run(merges)
    words, ends, totals = core.table()
    assert (words, ends, totals) == (table.words, table.ends.tobytes(), table.counts.tobytes())
    assert [core.word(i) for i in range(core.words)] == list(counts.items())
    assert Core(words, ends, totals, base).run(10**6) == Core(table.words, table.ends, table.counts, base).run(10**6)


@settings(max_examples=60)
@given(
    counts=st.dictionaries(words, small, min_size=1, max_size=20),
    room=st.tuples(st.integers(0, 50), st.integers(0, 400)),
)
def test_room_made_before_the_words_are_laid_out_changes_no_merge(counts, room):
    table = WordTable.from_counts(counts)
    plain = Trainer(table, 290)
    plain.run()
    halves = [
        WordTable.from_counts(dict(list(counts.items())[: len(counts) // 2])),
        WordTable.from_counts(dict(list(counts.items())[len(counts) // 2 :])),
    ]
    too_much = TableParts(iter(halves), 10, 1 << 50)  # more than the system gives: made as the words come
    for parts in (TableParts(iter(halves), *room), halves, too_much):  # room too small, as asked, refused
        reserved = Trainer(parts, 290)
        reserved.run()
        assert reserved.merges == plain.merges
    with pytest.raises(RuntimeError, match="before the pairs are counted"):
        reserved._core.reserve(1, 1)
