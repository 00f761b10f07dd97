"""Counters' tallies joined by hash (``engine.corpus.tally_parts``): every pre-token ends in one
part, with its count summed over every counter, however often the counters' outboxes sent it;
parallel counting hands back those parts."""

from __future__ import annotations

import os
import random
import tempfile
from array import array
from collections import Counter
from contextlib import ExitStack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.corpus._tally import Tally, concat_tables
from engine.corpus.counting import MIN_SHARD_BYTES, SHARDS_AT_LEAST, count_parts, count_table, even_shards
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.shards import SHARD_BYTES, CountSettings, PretokenTally
from engine.corpus.sources import Source
from engine.corpus.tally_parts import Outboxes, join, part_path, read_part, write_own
from engine.corpus.word_table import WordTable

GPT2 = PreTokenizer("gpt2")
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


def tally_of(counter_texts: list[str]) -> PretokenTally:
    tally = PretokenTally(GPT2)
    for text in counter_texts:
        tally.add(text)
    return tally


def joined(folder: str, tallies: list[Tally], texts: list[list[str]], adding) -> list[WordTable]:
    """Route each tally, count its texts, send, join, write and read back its part."""
    n = len(tallies)
    with ExitStack() as stack:
        outboxes = [stack.enter_context(Outboxes(tally, folder, c, n)) for c, tally in enumerate(tallies)]
        for tally, counter_texts in zip(tallies, texts, strict=True):
            for text in counter_texts:
                adding(tally, text)
        for box in outboxes:
            box.send()
    for c, tally in enumerate(tallies):
        join(tally, [part_path(folder, other, c) for other in range(n) if other != c])
        write_own(tally, folder, c)
    return [read_part(part_path(folder, c)) for c in range(n)]


def check_parts(parts: list[WordTable], expected: Counter[bytes]) -> None:
    seen: Counter[bytes] = Counter()
    for part in parts:
        assert [word for word, _ in part.items()] == sorted(word for word, _ in part.items())  # each part sorted
        for word, count in part.items():
            assert word not in seen  # no pre-token in two parts
            seen[word] = count
    assert seen == expected
    assert WordTable.concat(parts).counter() == expected


@settings(max_examples=120)
@given(counters=st.lists(st.tuples(st.lists(texts, max_size=4), st.lists(texts, max_size=4)), min_size=1, max_size=4))
def test_joined_parts_hold_each_pre_token_once_with_its_total(tmp_path_factory, counters):
    folder = str(tmp_path_factory.mktemp("parts"))
    tallies = [tally_of(before).tally for before, _ in counters]  # what a counter held before routing is sent too
    parts = joined(folder, tallies, [after for _, after in counters], Tally.add)
    assert os.listdir(folder) == []  # every file goes once read
    everything = [text for before, after in counters for text in before + after]
    check_parts(parts, tally_of(everything).table().counter())


def test_outboxes_send_new_long_and_common_pre_tokens_in_many_tables(tmp_path):
    """Past a table's worth, past a slot's room, past a table's bytes, and seen over and over."""
    rng = random.Random(0)
    common = [f"w{i}" for i in range(300)]
    texts = [[" ".join(rng.choice(common) if rng.random() < 0.5 else f"n{c}x{k}" for k in range(40_000))] for c in range(3)]
    texts[1] += ["y" * 100, "z" * 300_000, "y" * 100]
    parts = joined(str(tmp_path), [Tally(0) for _ in texts], texts, Tally.add)
    check_parts(parts, tally_of([text for counter in texts for text in counter]).table().counter())


def test_each_text_one_pre_token_is_routed_too(tmp_path):
    texts = [["a b", "c", "a b"], ["c", "d", ""]]
    parts = joined(str(tmp_path), [Tally(-1) for _ in texts], texts, Tally.add)
    check_parts(parts, Counter({b"a b": 2, b"c": 2, b"d": 1}))


def test_a_write_that_fails_is_said_by_send(tmp_path):
    tally = Tally(0)
    path = tmp_path / "read-only"
    path.write_bytes(b"")
    with open(path, "rb") as f:
        tally.route([None, f.fileno()], 0)
        tally.add(" ".join(f"w{i}" for i in range(100_000)))
        with pytest.raises(OSError):
            tally.send()
    tally.add("counts on")  # no longer routed
    assert b"counts" in tally.counts()


def test_a_routed_tally_is_routed_once_and_refuses_a_bad_plan():
    tally = Tally(0)
    with pytest.raises(ValueError, match="own among them"):
        tally.route([None, None], 2)
    r, w = os.pipe()
    try:
        tally.route([None, w], 0)
        with pytest.raises(RuntimeError, match="routed already"):
            tally.route([None, w], 0)
        tally.send()
    finally:
        os.close(r)
        os.close(w)


def written(tally: Tally, path) -> tuple[tuple[int, int], list[tuple[bytes, int]]]:
    """What ``write_sorted`` says it wrote, and the table read back."""
    with open(path, "wb") as f:
        size = tally.write_sorted(f.fileno())
    data = path.read_bytes()
    ends, counts = array("q", data[: 8 * size[0]]), array("q", data[8 * size[0] : 16 * size[0]])
    return size, list(WordTable(data[16 * size[0] :], ends, counts).items())


def test_gathered_tables_are_summed_once_sorted_and_a_broken_one_is_refused(tmp_path):
    tally = Tally(-1)
    tally.add("ab")
    tally.gather(b"abcab", array("q", [2, 3, 5]), array("q", [4, 1, 3]))
    tally.gather(memoryview(b"xab"), array("q", [1, 3]), array("q", [1, 10]))
    for ends, counts in [([2, 1], [1, 1]), ([4], [1]), ([2], [1])]:
        with pytest.raises(ValueError, match="backwards, past its words, or stop short"):
            tally.gather(b"abc", array("q", ends), array("q", counts))
    with pytest.raises(ValueError, match="one length"):
        tally.gather(b"abc", array("q", [3]), array("q", [1, 1]))
    with pytest.raises(RuntimeError, match="only write_sorted"):
        tally.add("more")
    assert written(tally, tmp_path / "t") == ((3, 4), [(b"ab", 18), (b"c", 1), (b"x", 1)])


def test_tables_concatenate_and_a_broken_one_is_refused():
    first, second = WordTable.from_counts({b"ab": 1, b"c": 2}), WordTable.from_counts({b"def": 3})
    assert list(WordTable.concat([first, second]).items()) == [(b"ab", 1), (b"c", 2), (b"def", 3)]
    assert WordTable.concat([first]) is first
    with pytest.raises(ValueError, match="table 1"):
        concat_tables([(b"ab", array("q", [2]), array("q", [1])), (b"abc", array("q", [2]), array("q", [1]))])


def test_a_small_corpus_is_cut_into_even_shards():
    def shard_bytes(size: int) -> int:
        return even_shards([Source("a.txt", "text", None, size)], SHARD_BYTES)

    assert shard_bytes(40 << 20) == (40 << 20) // SHARDS_AT_LEAST  # not 32 MB and 8
    assert shard_bytes(4 << 20) == MIN_SHARD_BYTES
    assert shard_bytes(100 << 30) == SHARD_BYTES


@pytest.mark.parametrize("workers", [2, 3])
def test_workers_hand_back_parts_that_share_no_pre_token(monkeypatch, tmp_path, workers):
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    words = [f"w{i}" for i in range(3000)]
    paths = []
    for k in range(4):
        path = tmp_path / f"part{k}.txt"
        path.write_text(" ".join(words[k * 500 : k * 500 + 2000]) + "\n")
        paths.append(str(path))
    settings = CountSettings("gpt2", ())
    parts, _ = count_parts(paths, settings, workers=workers, shard_bytes=4096)
    assert isinstance(parts, list) and 1 < len(parts) <= workers and all(len(part) for part in parts)
    alone_table = count_table(paths, settings, workers=1)[0]  # past IN_PROCESS: sorted too
    assert list(alone_table.items()) == sorted(alone_table.items())
    alone = alone_table.counter()
    assert sum((part.counter() for part in parts), Counter()) == alone
    assert sum(len(part) for part in parts) == len(alone)  # each pre-token in one part
    assert os.listdir(scratch) == []  # the parts' folder is gone
