"""Counters' tallies joined by hash (``engine.corpus.tally_parts``): every pre-token ends in one
part, with its count summed over every counter; parallel counting hands back those parts."""

from __future__ import annotations

import os
import tempfile
from array import array
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.corpus._tally import Tally, concat_tables
from engine.corpus.counting import MIN_SHARD_BYTES, SHARDS_AT_LEAST, count_parts, count_table, even_shards
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.shards import SHARD_BYTES, CountSettings, PretokenTally
from engine.corpus.sources import Source
from engine.corpus.tally_parts import join, part_path, read_part, write_own, write_parts
from engine.corpus.word_table import WordTable

GPT2 = PreTokenizer("gpt2")
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


def tally_of(counter_texts: list[str]) -> PretokenTally:
    tally = PretokenTally(GPT2)
    for text in counter_texts:
        tally.add(text)
    return tally


@settings(max_examples=120, deadline=None)
@given(counters=st.lists(st.lists(texts, max_size=5), min_size=1, max_size=4))
def test_joined_parts_hold_each_pre_token_once_with_its_total(tmp_path_factory, counters):
    folder = str(tmp_path_factory.mktemp("parts"))
    tallies = [tally_of(counter_texts).tally for counter_texts in counters]
    n = len(tallies)
    for c, tally in enumerate(tallies):
        write_parts(tally, [None if p == c else part_path(folder, c, p) for p in range(n)])
    for c, tally in enumerate(tallies):
        join(tally, [part_path(folder, other, c) for other in range(n) if other != c])
        write_own(tally, folder, c, n)
    parts = [read_part(part_path(folder, c)) for c in range(n)]
    assert os.listdir(folder) == []  # every file goes once read
    expected = tally_of([text for counter_texts in counters for text in counter_texts]).table().counter()
    seen: Counter[bytes] = Counter()
    for part in parts:
        assert [word for word, _ in part.items()] == sorted(word for word, _ in part.items())  # each part sorted
        for word, count in part.items():
            assert word not in seen  # no pre-token in two parts
            seen[word] = count
    assert seen == expected
    assert WordTable.concat(parts).counter() == expected


def test_a_tally_adds_a_table_and_refuses_a_broken_one():
    tally = Tally(-1)
    tally.add_table(b"abcab", array("q", [2, 3, 5]), array("q", [4, 1, 3]))
    tally.add_table(memoryview(b"xab"), array("q", [1, 3]), array("q", [1, 10]))
    assert tally.counts() == {b"ab": 17, b"c": 1, b"x": 1}
    with pytest.raises(ValueError, match="backwards or past"):
        tally.add_table(b"abc", array("q", [2, 1]), array("q", [1, 1]))
    with pytest.raises(ValueError, match="backwards or past"):
        tally.add_table(b"abc", array("q", [4]), array("q", [1]))
    with pytest.raises(ValueError, match="one length"):
        tally.add_table(b"abc", array("q", [3]), array("q", [1, 1]))


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
