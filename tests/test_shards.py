"""Shards: however a file is split, the counts of its shards add up to the counts of the whole."""

from __future__ import annotations

import ctypes
import io
import json
import os
import pickle
import platform
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import CorpusError, PreTokenizer
from engine.corpus import shards as shards_module
from engine.corpus.counting import count_inputs
from engine.corpus.shards import CountSettings, Shard, count_shard, line_cut, plan_shards, text_cut
from engine.corpus.sources import JSONL, TEXT, expand_inputs
from tests.test_fuzz import corpus_bytes
from tests.test_pretokenize import SPECIALS, texts

SPLITS = settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
OVERLAPPING = ["aa", "aaa", "<s>", " <s>", "a b", "b\nb", "a a a"]
"""Special tokens that overlap each other and hold spaces and newlines: the hardest to cut around."""
overlapping_texts = st.lists(st.sampled_from([*OVERLAPPING, "a", "b", " ", "\n", "x", "\t", ".", "é", "😀"]), max_size=30).map("".join)


def split_shards(path: Path, kind: str, cuts: list[int]) -> list[Shard]:
    """Shards of ``path`` starting at the (arbitrary) positions ``cuts``."""
    size = path.stat().st_size
    starts = sorted({0, *(c % (size + 1) for c in cuts)})
    ends: list[int | None] = [*starts[1:], None]
    return [Shard(str(path), kind, None, 0, s, e) for s, e in zip(starts, ends, strict=True)]


def shard_total(shards: list[Shard], settings: CountSettings) -> Counter[bytes]:
    total: Counter[bytes] = Counter()
    for shard in shards:
        total.update(count_shard(shard, settings).counts)
    return +total


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
@pytest.mark.parametrize("specials", [SPECIALS, OVERLAPPING, []], ids=["gpt-style", "overlapping", "none"])
@SPLITS
@given(text=texts | overlapping_texts, cuts=st.lists(st.integers(0, 1 << 12), max_size=8))
def test_any_split_of_a_text_file_counts_like_the_whole(tmp_path, pattern, specials, text, cuts):
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    settings = CountSettings(pattern, tuple(specials))
    assert shard_total(split_shards(path, TEXT, cuts), settings) == PreTokenizer(pattern, specials).count(text)


@SPLITS
@given(data=corpus_bytes, cuts=st.lists(st.integers(0, 1 << 10), max_size=8))
def test_any_split_of_damaged_bytes_counts_like_the_whole(tmp_path, data, cuts):
    """With ``errors="replace"`` shards decode invalid UTF-8 exactly as the whole file does;
    strict, the error names the same byte offset whichever shard meets it."""
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    pretok = PreTokenizer("gpt2", ["<|endoftext|>"])
    shards = split_shards(path, TEXT, cuts)
    replaced = CountSettings("gpt2", ("<|endoftext|>",), errors="replace")
    assert shard_total(shards, replaced) == pretok.count(data.decode("utf-8", "replace"))
    try:
        whole = pretok.count(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        with pytest.raises(CorpusError, match=f"at byte offset {e.start} "):
            shard_total(shards, CountSettings("gpt2", ("<|endoftext|>",)))
    else:
        assert shard_total(shards, CountSettings("gpt2", ("<|endoftext|>",))) == whole


@given(text=texts, pos=st.integers(0, 400))
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_cut_depends_only_on_the_bytes_around_it(tmp_path, text, pos):
    """The same bytes around a position give the same cut, whatever comes far before it."""
    pretok = PreTokenizer("gpt2", SPECIALS)
    path, padded = tmp_path / "a.txt", tmp_path / "b.txt"
    path.write_text(text, encoding="utf-8", newline="")
    pad = "x" * 50 + " "  # a different start, far away from any cut
    padded.write_text(pad + text, encoding="utf-8", newline="")
    pos = min(pos, path.stat().st_size)
    with open(path, "rb") as f, open(padded, "rb") as g:
        cut = text_cut(f, pos, pretok)
        assert pos <= cut <= path.stat().st_size
        if pos > 0:
            assert text_cut(g, pos + len(pad), pretok) == cut + len(pad)


documents = st.lists(st.sampled_from(["", "hello", "world", " the cat", "a\nb", "你好 😀", "<|endoftext|>x", "don't"]), max_size=12)


@SPLITS
@given(docs=documents, cuts=st.lists(st.integers(0, 1 << 9), max_size=6))
def test_any_split_of_a_jsonl_file_counts_each_document(tmp_path, docs, cuts):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": d, "id": i}) + "\n" for i, d in enumerate(docs)), encoding="utf-8")
    pretok = PreTokenizer("gpt2", ["<|endoftext|>"])
    expected: Counter[bytes] = Counter()
    for d in docs:
        expected.update(pretok.count(d))
    assert shard_total(split_shards(path, JSONL, cuts), CountSettings("gpt2", ("<|endoftext|>",))) == expected


def test_line_cuts_land_on_line_starts(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"ab\ncd\n\nef")
    with open(path, "rb") as f:
        assert [line_cut(f, p) for p in range(10)] == [0, 3, 3, 3, 6, 6, 6, 7, 9, 9]


def test_planned_shards_cover_the_file_and_pickle(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("some words here, and more words\n" * 500)
    settings = CountSettings("gpt2", ("<|endoftext|>",))
    shards = plan_shards(expand_inputs([path]), settings, shard_bytes=1000)
    assert len(shards) == -(-path.stat().st_size // 1000)
    assert sum(s.size for s in shards) == path.stat().st_size
    assert pickle.loads(pickle.dumps((shards, settings))) == (shards, settings)
    results = [count_shard(s, settings) for s in shards]
    assert sum(r.bytes_read for r in results) == path.stat().st_size
    assert sum((r.counts for r in results), Counter()) == PreTokenizer("gpt2", ["<|endoftext|>"]).count(path.read_text())


@pytest.mark.parametrize("workers", [1, 2])
def test_many_shards_here_or_in_workers_count_the_same_with_the_same_digest(monkeypatch, tmp_path, workers):
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)  # workers even for small files
    for i in range(3):
        (tmp_path / f"part{i}.txt").write_text(f"file {i}: some words here, and 12 more\n" * 300)
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"text": f"doc {i} text"}) + "\n" for i in range(200)))
    settings = CountSettings("gpt2", ("<|endoftext|>",))
    seen: list[int] = []
    counts, summary = count_inputs([tmp_path], settings, workers=workers, progress=lambda _, d, t: seen.append(d), shard_bytes=2048)
    alone, alone_summary = count_inputs([tmp_path], settings, workers=1, shard_bytes=2048)
    total = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert counts == alone and summary == alone_summary
    assert summary.bytes_read == total and seen == sorted(seen) and seen[-1] == total
    assert len(summary.digest) == 32


def test_a_bad_jsonl_line_in_a_later_shard_is_named_by_its_line_number(tmp_path):
    path = tmp_path / "docs.jsonl"
    lines = [json.dumps({"text": f"document number {i}"}) for i in range(100)]
    lines[76] = '{"text": 7}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorpusError, match=r'docs.jsonl: line 77: "text" is a number, not a string'):
        count_inputs([path], CountSettings(), workers=1, shard_bytes=256)
    counts, summary = count_inputs([path], CountSettings(skip_bad_records=True), workers=1, shard_bytes=256)
    assert summary.bad_records == 1 and counts[b" number"] == 99


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc tunables exist only on glibc")
def test_on_glibc_the_heap_is_trimmed_and_the_mmap_threshold_kept():
    assert shards_module._malloc_trim is not None and shards_module._mallopt is not None
    shards_module.trim_heap()
    shards_module.keep_mmap_threshold()


def _no_dll(name):
    raise TypeError("LoadLibrary() argument 1 must be str, not None")  # Windows, for CDLL(None)


def _unknown_name(name):
    raise ValueError(f"unrecognized configuration name: {name}")  # macOS has no CS_GNU_LIBC_VERSION


def _no_value(name):
    return None  # a C library that knows the name but is not glibc


@pytest.mark.parametrize("confstr", [None, _unknown_name, _no_value], ids=["windows", "macos", "other-libc"])
def test_elsewhere_the_malloc_tunables_are_left_alone(monkeypatch, confstr):
    """Where glibc is not, nothing is looked up: on Windows ``os.confstr`` is missing and
    ``ctypes.CDLL(None)`` raises TypeError, which must not stop the module from importing."""
    if confstr is None:
        monkeypatch.delattr(os, "confstr", raising=False)
    else:
        monkeypatch.setattr(os, "confstr", confstr)
    monkeypatch.setattr(ctypes, "CDLL", _no_dll)
    assert shards_module._glibc("malloc_trim") is None and shards_module._glibc("mallopt") is None
    monkeypatch.setattr(shards_module, "_malloc_trim", None)
    monkeypatch.setattr(shards_module, "_mallopt", None)
    shards_module.trim_heap()
    shards_module.keep_mmap_threshold()


LINE_PIECES = [b"a", b"bc", b"\n", b"\n\n", b"\xe4\xb8\x80", b" "]


@settings(max_examples=200)
@given(data=st.lists(st.sampled_from(LINE_PIECES), max_size=60).map(b"".join), block=st.integers(1, 9))
def test_lines_of_a_stream_read_in_blocks_of_any_size(data, block):
    """Blocks of whole lines: lines longer than a block are held in pieces and come out whole."""
    blocks = list(shards_module._line_blocks(io.BytesIO(data), block))
    assert b"".join(blocks) == data
    assert all(b.endswith(b"\n") for b in blocks[:-1]) and all(blocks)


def last_cut_by_position(data: bytes, pretok: PreTokenizer, start: int, stop: int) -> int:
    """``_last_cut`` the slow way: every place from the last down, the first where a rule's
    character or a line's start may be cut."""
    rules, specials, reach = shards_module._cut_terms(pretok)
    seen, low, lone = stop - reach + 1, start + reach + 4, pretok.family == "gpt2"
    for p in range(seen - 1, low - 1, -1):
        if p - 1 >= low and data[p - 1 : p] == b"\n" and shards_module._line_cut_ok(data, p - 1, stop, seen, lone, specials):
            return p
        if data[p : p + 1] in rules and shards_module._cut_ok(data, p, rules[data[p : p + 1]], specials):
            return p
    return 0


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k"])
@pytest.mark.parametrize("specials", [SPECIALS, OVERLAPPING, []], ids=["gpt-style", "overlapping", "none"])
@SPLITS
@given(text=texts | overlapping_texts | st.lists(texts, max_size=8).map("\n".join), start=st.integers(0, 40), length=st.integers(0, 200))
def test_a_blocks_last_cut_is_the_last_place_a_cut_holds(pattern, specials, text, start, length):
    """``_last_cut`` walks a rule's candidates and the lines' starts from the last down
    together; it finds the place that trying every place from the last down finds."""
    pretok = PreTokenizer(pattern, specials)
    data = text.encode("utf-8")
    start = min(start, len(data))
    stop = min(start + length, len(data))
    assert shards_module._last_cut(data, pretok, start, stop) == last_cut_by_position(data, pretok, start, stop)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "o200k"])
@pytest.mark.parametrize("specials", [SPECIALS, OVERLAPPING, []], ids=["gpt-style", "overlapping", "none"])
@SPLITS
@given(text=texts | overlapping_texts | st.lists(texts, max_size=8).map("\n".join), size=st.integers(8, 64))
def test_a_texts_pieces_are_the_blocks_of_a_file_of_it(pattern, specials, text, size):
    """``text_pieces`` cuts a text in memory, as views of it, where a file of it is cut into
    blocks of that size as it is read (``_text_blocks``)."""
    pretok = PreTokenizer(pattern, specials)
    data = text.encode("utf-8")
    pieces = list(shards_module.text_pieces(data, pretok, size))
    assert [bytes(piece) for piece, _ in pieces] == (list(shards_module._text_blocks(io.BytesIO(data), pretok, size)) or [b""])
    assert [last for _, last in pieces] == [False] * (len(pieces) - 1) + [True]


JSON_PIECES = ['{"text": "a"}', '{"text": 1}', "[1, 2]", '"s"', "NaN", "1e5", " ", "\t", "\r", "\x0b", "\u3000"]
JSON_PIECES += ["{", "}", ",", ":", '"', "x", "é"]


@settings(max_examples=300)
@given(line=st.lists(st.sampled_from(JSON_PIECES), max_size=6).map("".join))
def test_a_jsonl_line_is_read_as_json_loads_reads_it(line):
    """The value, or the same error message."""
    try:
        want: object = json.loads(line)
    except ValueError as e:
        want = str(e)
    try:
        got: object = shards_module._json_value(line)
    except ValueError as e:
        got = str(e)
    assert got == want or (want != want and got != got)  # NaN is not equal to itself
