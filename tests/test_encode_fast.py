"""The compiled encode path against the Python merge loop, decode, and ``encode_batch``."""

from __future__ import annotations

import gc
import platform
import random
import struct
import subprocess
import sys
import threading
import time
import tracemalloc
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Tokenizer, Trainer
from engine.encode import tokenizer as T
from engine.encode._encoder_core import CHUNK_CHARS, Encoder, PackedIds, SharedCache, Vocab, fill_ids, join_ends, unfilled_ids, unit_ends
from engine.encode.flat import UINT32, FlatIds
from tests.test_encode_conformance import gpt2
from tests.test_pretokenize_core import piece
from tests.test_tokenizer import SAMPLE, SPECIALS, train

texts = st.lists(st.one_of(piece, st.sampled_from(SPECIALS), st.sampled_from(SAMPLE.split(" ")[:100])), max_size=30).map("".join)


def reference_encode(tok: Tokenizer, text: str) -> list[int]:
    """Special tokens, the ``regex`` module's pre-tokens and ``Tokenizer._bpe`` (the loop the
    encode view shows): nothing compiled but the merge table's lookups."""
    ids: list[int] = []
    merged: dict[str, list[int]] = {}
    for part, special in tok.pretokenizer.split_special(text):
        if special:
            ids.append(tok.special_ids[part])
            continue
        for pretoken in regex.findall(tok.pretokenizer.pattern, part):
            if pretoken not in merged:
                entry = tok.encoder.get(pretoken.encode()) if tok.direct else None
                merged[pretoken] = [entry] if entry is not None else tok._bpe(pretoken.encode())
            ids += merged[pretoken]
    return ids


def fresh(tok: Tokenizer, direct: bool, cache_size: int = 1 << 17) -> Tokenizer:
    out = Tokenizer(tok.vocab, tok.merges, tok.special_tokens, tok.pattern, cache_size)
    out.direct = direct
    return out


@pytest.fixture(scope="module", params=["gpt2 files", "gpt2 trained", "gpt4 trained", "cl100k trained", "o200k trained", "qwen2 trained"])
def tok(request):  # noqa: ANN001, ANN201
    """GPT-2's files, and vocabularies trained under each family of compiled patterns."""
    if request.param == "gpt2 files":
        return gpt2()
    pattern = request.param.split()[0]
    return train(pattern, 400) if pattern != "gpt2" else train()


@pytest.fixture(scope="module")
def small_caches(tok):  # noqa: ANN001, ANN201
    """The same vocabulary with caches emptied every few pre-tokens, direct on and off."""
    return [fresh(tok, True, 3), fresh(tok, False, 5)]


@settings(max_examples=150)
@given(text=texts)
def test_compiled_encode_is_the_python_merge_loop(tok, small_caches, text):
    expected = reference_encode(tok, text)
    assert tok.encode(text) == expected
    assert tok.decode(expected) == text
    twice = reference_encode(tok, text + text)
    for small in small_caches:
        assert small.encode(text) == expected
        assert small.encode(text + text) == twice


@pytest.mark.parametrize(
    "text",
    ["a" * 1000, " " * 300 + "x", "\n" * 400, "日本語" * 200, "!?" * 300, "1" * 999, "a" * 4095, "a" * 4096, "日本語" * 1400, "b" * 9000],
)
def test_long_pretokens_cached_up_to_4095_bytes(tok, text):
    """Up to 4,095 bytes a pre-token is cached, its second encode read from the cache; a
    longer one is merged every time; above 16 tokens through the heap."""
    expected = reference_encode(tok, text)
    assert tok.encode(text) == expected == tok.encode(text)
    for small in (fresh(tok, True, 1), fresh(tok, False, 2)):  # a cache that holds one or two
        assert small.encode(text + "." + text) == reference_encode(tok, text + "." + text)


@pytest.mark.parametrize(("length", "cached"), [(17, 1), (255, 1), (256, 1), (4095, 1), (4096, 0), (20000, 0)])
def test_the_longest_pretoken_cached(tok, length, cached):
    """A pre-token of up to 4,095 bytes (that is no vocabulary entry) takes an entry in the
    cache; a longer one takes none."""
    fresh_tok = fresh(tok, True)
    fresh_tok.encode("z" * length)
    assert fresh_tok._shared is not None and len(fresh_tok._shared) == cached


ascii_runs = st.text(st.characters(max_codepoint=0x7F), min_size=0, max_size=40)
wide = st.characters(min_codepoint=0x80, exclude_categories=("Cs",))


@settings(max_examples=150)
@given(st.lists(st.tuples(ascii_runs, wide), max_size=8), ascii_runs)
def test_ascii_runs_between_wide_characters_read_whole(tok, parts, tail):
    """A str of 2- or 4-byte code units is turned into UTF-8 sixteen ASCII units at a time
    where it can be: runs of every length, at every offset, around any other character."""
    text = "".join(run + char for run, char in parts) + tail
    expected = reference_encode(tok, text)
    assert tok.encode(text) == expected
    assert tok.decode(expected) == text


def chunks_around(filler: str, around: list[str], shift: int) -> str:
    """A text of three chunks and more (``CHUNK_CHARS`` characters), ``filler`` repeated,
    with the texts of ``around`` starting ``shift`` characters before the ends of the first
    two."""
    text = ""
    for k, middle in enumerate(around, 1):
        gap = k * CHUNK_CHARS - shift - len(text)
        text += (filler * (gap // len(filler) + 1))[:gap] + middle
    return text + filler * (CHUNK_CHARS // len(filler) + 1)


LINE_PARTS = ["\n", "\r\n", " ", "  ", "\t", "\u3000", "\u00a0", "\u2028", "\x1c", "行", "a", "7", "。", "'s", SPECIALS[0]]
LINE_ENDS = st.lists(st.sampled_from(LINE_PARTS), max_size=12).map("".join)
"""Lines and spaces of every kind, with what may follow them, to lie about a chunk's end."""
FILLERS = [SAMPLE, "西遊記 第一回 靈根孕育源流出", "ab\n\n", "行者道：我去也。\r\n", "行者道：我去也。\n"]
FILLERS += ["\u3000\u3000行者道。\r\n\r\n", "行者。 \n \n"]
"""Texts with spaces after letters, with lines and no such spaces, and with neither."""


@settings(max_examples=25)
@given(st.lists(st.one_of(texts, LINE_ENDS), min_size=2, max_size=2), st.integers(0, 40), st.sampled_from(FILLERS))
def test_a_long_text_is_encoded_a_chunk_at_a_time_as_a_whole(tok, around, shift, filler):
    """A text longer than two chunks is made UTF-8 and encoded a chunk at a time, cut where
    every compiled pattern starts a pre-token whatever follows (a space after a character
    that is no whitespace; a line's start whose first character is none, under GPT-2 after
    a newline that follows none) and no special token lies across: whatever lies about a
    chunk's end, and with few cuts or none, the ids are the whole text's."""
    text = chunks_around(filler, around, shift)
    assert tok.encode(text) == reference_encode(tok, text)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_no_chunk_is_cut_inside_whitespace(pattern):
    """Whitespace runs about a chunk's end, at every offset, under a vocabulary that merges
    them: a space after another may belong to the run before it, so no cut is made there."""
    indented = "".join(f"{' ' * (4 * k)}line {k}  \n\n" for k in range(6)) * 30
    trainer = Trainer.from_text(SAMPLE + indented, 400, pattern=pattern)
    trainer.run()
    tok = Tokenizer.from_trainer(trainer)
    middle = "it.      \n\n        then"
    for shift in range(len(middle) + 4):
        text = chunks_around(SAMPLE, [middle, middle], shift)
        assert tok.encode(text) == reference_encode(tok, text), shift


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", "qwen2"])
def test_no_chunk_is_cut_at_a_line_that_starts_with_whitespace(pattern):
    """Lines of Chinese (no spaces to cut at) about a chunk's end, at every offset, some
    starting with whitespace of every kind, under a vocabulary that merges newlines with
    the whitespace after them: only a line whose first character is no whitespace is cut at
    (under GPT-2, after a newline that follows none)."""
    spaces = ["\u3000\u3000", "\u00a0", " ", "\t", "\u2028", "\x1c", "\u2003"]
    lines = "".join(f"行者道{k}。{'' if k % 3 else chr(13)}\n{spaces[k % len(spaces)] * (k % 2)}\n" for k in range(40)) * 20
    trainer = Trainer.from_text(lines, 500, pattern=pattern)
    trainer.run()
    tok = Tokenizer.from_trainer(trainer)
    filler = "行者道：我去也。\n"
    for middle in ("也。\r\n\u3000\u3000\n第", "也。\n\u00a0\n\u3000行", "也\n\u2028\n\x1c\n第"):
        for shift in range(len(middle.encode()) + 4):
            text = chunks_around(filler, [middle, middle], shift)
            assert tok.encode(text) == reference_encode(tok, text), (middle, shift)


@pytest.mark.parametrize("shift", range(0, 24, 3))
def test_no_chunk_is_cut_inside_a_special_token(shift):
    """A special token with spaces in it, about a chunk's end: never cut."""
    base = gpt2()
    tok = Tokenizer(base.vocab, base.merges, ["in the end it was", "<|x y|>"], base.pattern)
    text = chunks_around("Once upon a time it was over. ", ["in the end it was <|x y|>", "in the end it was"], shift)
    assert tok.encode(text) == reference_encode(tok, text)
    assert tok.encode(text).count(tok.special_ids["in the end it was"]) == 2


@settings(max_examples=150)
@given(
    st.lists(st.text("<|ab", min_size=1, max_size=4), min_size=1, max_size=3, unique=True),
    st.lists(st.one_of(st.text("<|ab x", max_size=40), st.integers(0, 2)), max_size=16),
)
def test_special_tokens_are_found_by_their_first_bytes_anywhere(specials, parts):
    """Special tokens whose first two bytes all agree, or their first only, or neither, one
    a byte long: each is found where ``regex`` finds it, in texts full of those bytes, at
    any place, the first of all (with two, the second is looked for, the one before it
    checked)."""
    base = train()
    tok = Tokenizer(base.vocab, base.merges, specials, base.pattern)
    text = "".join(specials[part % len(specials)] if isinstance(part, int) else part for part in parts)
    assert tok.encode(text) == reference_encode(tok, text)


@pytest.mark.parametrize("at", [0, 7, 15, 16, 17, 31, 40])
def test_lone_surrogate_after_ascii_is_refused(tok, at):
    with pytest.raises(UnicodeEncodeError):
        tok.encode("x" * at + "\ud800" + "y" * 20 + "é")


def test_lone_surrogate_is_refused_like_str_encode(tok):
    with pytest.raises(UnicodeEncodeError):
        tok.encode("abc \ud800 def")
    assert tok.encode("abc") == reference_encode(tok, "abc")  # and the encoder works on


@settings(max_examples=40)
@given(st.lists(texts, max_size=12), st.integers(1, 3))
def test_encode_batch_is_encode_of_each(tok, batch, workers):
    assert tok.encode_batch(batch, workers=workers) == [tok.encode(text) for text in batch]


def unflattened(flat: FlatIds) -> list[list[int]]:
    """The lists of a ``FlatIds``, read through its offsets."""
    assert flat.ids.format == UINT32 and flat.offsets.format == "q"
    assert flat.offsets[0] == 0 and flat.offsets[-1] == len(flat.ids)
    return [flat.ids[a:b].tolist() for a, b in zip(flat.offsets[:-1], flat.offsets[1:], strict=True)]


@settings(max_examples=40)
@given(st.lists(texts, max_size=12), st.integers(1, 3), st.booleans())
def test_a_flat_batch_is_encode_of_each_in_one_buffer(tok, batch, workers, listed):
    """``encode_batch_flat`` of a list, or of any iterable (in units), in any threads."""
    flat = tok.encode_batch_flat(batch if listed else iter(batch), workers)
    assert unflattened(flat) == [tok.encode(text) for text in batch]


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(texts, max_size=8), st.sampled_from([(4, 8), (64, 32)]))
def test_a_flat_batch_of_long_texts_cut_into_pieces_keeps_each_text_whole(monkeypatch, tok, batch, sizes):
    """A long text's pieces, encoded apart by the threads, end one text between them."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", sizes[0])
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", sizes[0])
    monkeypatch.setattr("engine.encode.tokenizer.PIECE_CHARS", sizes[1])
    monkeypatch.setattr("engine.encode.tokenizer.CUT_WINDOW", sizes[1] // 2)
    long = [text * 5 for text in batch]
    assert unflattened(tok.encode_batch_flat(long, 2)) == [tok.encode(text) for text in long]


def test_a_flat_batch_under_a_custom_pattern_and_of_nothing(tok):
    trainer = Trainer.from_text(SAMPLE, 300, pattern=r"\S+|\s+")
    trainer.run()
    custom = Tokenizer.from_trainer(trainer)
    lines = SAMPLE.splitlines(keepends=True)
    assert unflattened(custom.encode_batch_flat(lines, 2)) == [custom.encode(line) for line in lines]
    for tokenizer in (tok, custom):
        flat = tokenizer.encode_batch_flat([])
        assert (flat.ids.tolist(), flat.offsets.tolist()) == ([], [0])


def test_parts_of_ids_are_joined_with_their_offsets(tok):
    """``join_ends``: ids one after the other, ends rebased onto a first 0; a part that ends
    no text goes on into the next; an encoder's ids alone are handed over, not copied."""
    hello, world = tok.encode("Hello"), tok.encode("world!")
    one = tok._new_encoder().encode_ends(["Hello", "", "world!"])
    ids, offsets = join_ends([one])
    n = len(hello) + len(world)
    assert ids is one[0] and array("q", offsets).tolist() == [0, len(hello), len(hello), n]
    assert memoryview(ids).tolist() == hello + world
    ids, offsets = join_ends([one, (packed([8], "I"), b""), (packed([9, 10], "I"), struct.pack("2n", 1, 2))])
    assert memoryview(ids).tolist() == [*hello, *world, 8, 9, 10]
    assert array("q", offsets).tolist() == [0, len(hello), len(hello), n, n + 2, n + 3]
    ids, offsets = join_ends([])
    assert (bytes(ids), offsets) == (b"", struct.pack("q", 0))
    assert memoryview(ids).readonly
    with pytest.raises(ValueError, match="out of order"):
        join_ends([(packed([1, 2], "I"), struct.pack("2n", 2, 1))])
    with pytest.raises(ValueError, match="out of order"):
        join_ends([(packed([1], "I"), struct.pack("n", 2))])
    with pytest.raises(ValueError, match="a size each"):
        join_ends([(packed([1], "I"), b"\0")])
    with pytest.raises(TypeError, match="a part is a tuple"):
        join_ends([packed([1], "I")])


def test_the_memory_of_large_ids_freed_goes_to_the_next_large_batch(tok):
    """A large batch's ids, once freed, lend their memory to the next large batch's, in
    one thread (the encoder's buffer) or two (the parts joined): the same ids, and no new
    memory of their size."""
    texts = [f"{SAMPLE} {k}" for k in range(150)]  # past 2^18 ids, under every vocabulary here
    expected = tok.encode_batch_flat(texts, 1)
    ids, offsets = bytes(expected.ids), bytes(expected.offsets)
    assert len(ids) >= 4 << 18
    tok.encode_batch_flat(texts, 2)  # the threads' encoders made, their tables grown
    tracemalloc.start()
    try:
        first, second = tok.encode_batch_flat(texts, 1), tok.encode_batch_flat(texts, 1)  # second in new, traced memory
        del expected, first, second
        held, _ = tracemalloc.get_traced_memory()
        for workers in (1, 2, 1, 2):
            flat = tok.encode_batch_flat(texts, workers)
            assert (bytes(flat.ids), bytes(flat.offsets)) == (ids, offsets)
            grown, _ = tracemalloc.get_traced_memory()
            assert grown - held < len(ids) // 2
            del flat
    finally:
        tracemalloc.stop()


def test_threads_copy_parts_of_ids_into_one_room_together():
    """``fill_ids`` copies parts into room from ``unfilled_ids`` where told, and
    ``join_ends`` takes that room as the parts' ids; parts that do not fit, or are not whole
    ids, or a room of another size, are refused."""
    parts = [(packed([1, 2], "I"), struct.pack("n", 2)), (packed([3], "I"), b""), (packed([4, 5, 6], "I"), struct.pack("2n", 1, 3))]
    out = unfilled_ids(6)
    fill_ids(out, 3, [parts[2][0]])  # the later run first, as a helper may
    fill_ids(out, 0, [parts[0][0], parts[1][0]])
    ids, offsets = join_ends(parts, out)
    expected_ids, expected_offsets = join_ends(parts)
    assert ids is out and bytes(ids) == bytes(expected_ids) and offsets == expected_offsets
    assert memoryview(ids).tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(IndexError, match="do not fit"):
        fill_ids(out, 5, [parts[0][0]])
    with pytest.raises(IndexError, match="do not fit"):
        fill_ids(out, -1, [parts[1][0]])
    with pytest.raises(ValueError, match="4 bytes each"):
        fill_ids(out, 0, [b"\0" * 5])
    with pytest.raises(ValueError, match="not the parts' ids"):
        join_ends(parts, unfilled_ids(5))
    with pytest.raises(ValueError, match="not negative"):
        unfilled_ids(-1)
    assert bytes(unfilled_ids(0)) == b""


def test_encode_utf8_is_encode_of_the_bytes_or_none(tok):
    """``Encoder.encode_utf8``: the ids of valid UTF-8 as ``encode`` gives them for its text,
    packed, ``eot`` after them; None for bytes that are not UTF-8. Blocks of many lengths end
    at many places in memory, some a few bytes before a page ends, where they are copied
    first."""
    encoder = tok._own_encoder()
    special = " <|endoftext|>" if "<|endoftext|>" in tok.special_tokens else ""
    text = f"Hello world, 孙悟空{special} 🙂 don't " * 8
    for n in range(len(text)):
        data = text[:n].encode("utf-8")
        ids = encoder.encode_utf8(data, 4, 7)
        assert ids is not None
        assert list(array(UINT32, ids)) == [*tok.encode(text[:n]), 7] or sys.byteorder == "big"
    assert encoder.encode_utf8(b"caf\xe9", 4, -1) is None and encoder.encode_utf8(b"\xed\xa0\x80", 4, -1) is None
    assert encoder.encode_utf8(b"", 2, 7) == b"\x07\x00"
    with pytest.raises(ValueError, match="width"):
        encoder.encode_utf8(b"a", 3, -1)


UTF8_PIECES = st.sampled_from(
    [b"a", b" ", "道".encode(), "é".encode(), "😀".encode(), "ア".encode(), "\uffff".encode(), "\ud7ff".encode(), "\ue000".encode()]
    + [b"\xff", b"\x80", b"\xc0\xaf", b"\xe0\x80\x80", b"\xe0\xa0\x80", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xe1\x80", b"\xef\xbf"]
)


@pytest.fixture(scope="module")
def gpt2_encoder():  # noqa: ANN201
    return gpt2()._own_encoder()


def _broken(chars: str, at: int, byte: int) -> bytes:
    """``chars`` as UTF-8, one byte of it (``at``, wrapped) replaced by ``byte``."""
    data = bytearray(chars.encode("utf-8"))
    data[at % len(data)] = byte
    return bytes(data)


CJK_BROKEN = st.builds(
    _broken,
    st.text(st.characters(min_codepoint=0x1000, max_codepoint=0xFFFF, exclude_categories=("Cs",)), min_size=4, max_size=16),
    st.integers(0, 63),
    st.integers(0, 255),
)
"""Runs of three-byte characters, the validator's fast path, with one byte made anything."""


@settings(max_examples=600)
@given(data=st.lists(UTF8_PIECES, max_size=40).map(b"".join) | st.tuples(st.sampled_from([b"", b"a", b"ab"]), CJK_BROKEN).map(b"".join))
def test_encode_utf8_refuses_exactly_what_python_cannot_decode(gpt2_encoder, data):
    """The encoder's UTF-8 check, four three-byte characters at a time where it can, agrees
    with Python's strict decoder on runs of every kind of character and broken sequence."""
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert (gpt2_encoder.encode_utf8(data, 4, -1) is not None) == valid


def test_utf8_reaches_counts_each_strs_most_utf8():
    """An ASCII str counts its length; any other its length at the most bytes its kind takes
    a character (Latin-1 2, the rest of the BMP 3, beyond it 4); an item not a str counts
    as enough, so the threaded path says what is wrong with it."""
    assert T.utf8_reaches(["ab", "c"], 3) and not T.utf8_reaches(["ab", "c"], 4)
    assert T.utf8_reaches(("é",), 2) and not T.utf8_reaches(("é",), 3)
    assert T.utf8_reaches(["道"], 3) and not T.utf8_reaches(["道"], 4)
    assert T.utf8_reaches(["😀"], 4) and not T.utf8_reaches(["😀"], 5)
    assert T.utf8_reaches([], 0) and not T.utf8_reaches([], 1)
    assert T.utf8_reaches(["a", 7], 100)
    with pytest.raises(TypeError):
        T.utf8_reaches(iter(["a"]), 1)  # type: ignore[arg-type]


def test_a_small_batch_or_stream_is_encoded_in_one_thread(monkeypatch, tok):
    """Below ``THREADED_BYTES`` of UTF-8 a list of texts (or a dataset's one batch), and a
    stream of fewer than ``STREAM_THREADED_UNITS`` units, are encoded in this thread alone: a
    helper saved less than waking it cost. At or past them, the threads share the work. The
    ids are the same."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", 64)
    batch = [f"text {i} " * (1 + i % 7) for i in range(40)]
    size = sum(len(text) for text in batch)
    expected = [tok.encode(text) for text in batch]
    units = sum(1 for _ in T.Tokenizer._units(tok, iter(batch), 2))
    packed_batch = list(tok.encode_packed_batches([(batch, [True] * len(batch))], "uint32", 0, 1))
    calls = [
        (lambda: tok.encode_batch(batch, 2), expected),
        (lambda: unflattened(tok.encode_batch_flat(batch, 2)), expected),
        (lambda: list(tok.encode_stream(iter(batch), 2)), expected),
        (lambda: unflattened(tok.encode_batch_flat(iter(batch), 2)), expected),
        (lambda: list(tok.encode_packed_batches([(batch, [True] * len(batch))], "uint32", 0, 2)), packed_batch),
    ]
    for least_bytes, least_units, threaded in ((size + 1, units + 1, False), (size, units, True)):
        monkeypatch.setattr("engine.encode.tokenizer.THREADED_BYTES", least_bytes)
        monkeypatch.setattr("engine.encode.tokenizer.STREAM_THREADED_UNITS", least_units)
        for call, want in calls:
            helped: list[int] = []
            pool = T.Tokenizer._pool

            def spy(self: Tokenizer, threads: int, pool=pool, helped=helped) -> object:
                helped.append(threads)
                return pool(self, threads)

            monkeypatch.setattr(T.Tokenizer, "_pool", spy)
            assert call() == want
            assert bool(helped) == threaded


@pytest.mark.parametrize("threads", [2, 3])
def test_a_batchs_ids_are_copied_into_new_memory_by_the_threads_together(monkeypatch, tok, threads):
    """Ids of many units bound for memory new to the process are copied there by the
    threads at once, each a run of the parts of about as many ids; into the memory of the
    last result freed, by this thread alone. Either way, the ids are ``encode``'s."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.JOINED_APART", 0)
    batch = [f"text {i} " * (1 + i % 7) for i in range(200)]
    expected = [tok.encode(text) for text in batch]
    fillers: list[tuple[bool, int]] = []
    fill = T.fill_ids

    def spy(out: PackedIds, at: int, parts: list[bytes]) -> None:
        fillers.append((threading.current_thread() is threading.main_thread(), sum(memoryview(part).nbytes for part in parts) // 4))
        fill(out, at, parts)

    monkeypatch.setattr(T, "fill_ids", spy)
    for kept in (False, True):
        monkeypatch.setattr(T, "kept_room", lambda n, kept=kept: kept)
        fillers.clear()
        assert unflattened(tok.encode_batch_flat(batch, threads)) == expected
        if kept:
            assert not fillers
            continue
        assert len(fillers) == threads and sum(main for main, _ in fillers) == 1
        total = sum(map(len, expected))
        assert sum(n for _, n in fillers) == total and max(n for _, n in fillers) < total


def test_a_long_texts_ids_take_the_memory_of_the_last_freed(tok):
    """One thread's flat ids of a long Chinese text, encoded again while the last result
    lives and once more after it is freed, land in the first result's memory: it kept room
    for more ids than its own (the encoder asks room a chunk at a time, an id a byte), so no
    memory new to the process is faulted in a call."""
    np = pytest.importorskip("numpy")
    text = "行者道：我去也。\n" * 40_000
    first = tok.encode_batch_flat([text], 1)
    assert len(first.ids) >= 1 << 18  # large enough to be kept
    address = np.frombuffer(first.ids, np.uint32).ctypes.data
    second = tok.encode_batch_flat([text], 1)
    del first
    third = tok.encode_batch_flat([text], 1)
    assert np.frombuffer(third.ids, np.uint32).ctypes.data == address
    assert unflattened(third) == unflattened(second) == [tok.encode(text)]


def packed(ids: list[int], typecode: str) -> bytes:
    values = array(typecode, ids)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


@settings(max_examples=40)
@given(st.lists(texts, max_size=8), st.integers(1, 3))
def test_packed_ids_are_encode_as_little_endian_bytes(tok, batch, workers):
    """``encode_packed`` (files of ids) packs in C, in the worker threads: the same ids."""
    for dtype, typecode in [("uint16", "H"), ("uint32", "I")]:
        expected = [packed(tok.encode(text), typecode) for text in batch]
        assert [tok.encode_packed(text, dtype) for text in batch] == expected
        assert list(tok.encode_packed_stream(batch, dtype, workers)) == expected


@settings(max_examples=60)
@given(texts, st.integers(0, 200), st.integers(0, 200))
def test_a_span_of_a_text_is_encoded_as_its_slice(tok, text, start, end):
    """The piece of a long text a thread takes is encoded where it lies: ``encode_packed``
    of ``text[start:end]`` given the whole text and the span (clipped as a slice is)."""
    encoder = tok._new_encoder()
    assert encoder.encode_packed(text, 4, start, end) == packed(tok.encode(text[start:end]), "I")
    assert encoder.encode_packed(text, 4, start) == packed(tok.encode(text[start:]), "I")
    assert encoder.encode_packed(text, 4, -start, -end) == b""  # no negative positions: nothing


def test_an_id_too_wide_for_uint16_is_refused():
    vocab = {i: bytes([i]) for i in range(256)} | {70_000: b"ab"}
    tok = Tokenizer(vocab, [(b"a", b"b")])
    assert tok.encode_packed("ab", "uint32") == packed([70_000], "I")
    with pytest.raises(OverflowError):
        tok.encode_packed("ab", "uint16")


def test_encode_batch_under_a_custom_pattern():
    trainer = Trainer.from_text(SAMPLE, 300, pattern=r"\S+|\s+")
    trainer.run()
    tok = Tokenizer.from_trainer(trainer)
    lines = SAMPLE.splitlines(keepends=True)
    assert tok.encode_batch(lines, workers=2) == [tok.encode(line) for line in lines]
    assert list(tok.encode_packed_stream(lines, "uint16", 2)) == [packed(tok.encode(line), "H") for line in lines]


def test_one_tokenizer_shared_by_threads(tok):
    """The compiled encoder drops the GIL; threads calling one tokenizer take turns on its cache."""
    lines = [line + f" {n}" for n, line in enumerate(SAMPLE.splitlines() * 5)]
    expected = [reference_encode(tok, line) for line in lines]
    shared = fresh(tok, tok.direct, 64)
    results: dict[int, list[list[int]]] = {}

    def run(k: int) -> None:
        results[k] = [shared.encode(line) for line in lines]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[k] == expected for k in range(4))


LINES = ["。", "！”", "\n", "\r\n", "\r", "/", " ", "    ", "\t", "\u3000", "你好", "ab", "12", " the", "<|pad|>", "<|endoftext|>"]
"""Where lines meet: punctuation before a newline (which it takes in), whitespace after one."""


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.one_of(texts, st.lists(st.sampled_from(LINES), max_size=60).map("".join)),
    more=st.lists(st.sampled_from(LINES), max_size=8).map("".join),
)
def test_an_encoder_cut_changes_no_pretoken(tok, text, more):
    """``Encoder.cut`` (a long text's pieces for threads, the chunks of one thread): whatever
    follows, the text up to the cut and from it split into the pre-tokens of the whole."""
    whole = text + more
    expected = pretokens(tok, whole)
    cuts = {tok._own_encoder().cut(whole, 0, at) for at in range(len(whole) + 1)}  # the last before each place
    assert all(0 <= cut <= len(whole) for cut in cuts)
    for cut in cuts - {0}:
        assert pretokens(tok, whole[:cut]) + pretokens(tok, whole[cut:]) == expected


def pretokens(tok: Tokenizer, text: str) -> list[str]:
    """The special tokens of ``text`` and the pre-tokens between them, in order."""
    pretok = tok.pretokenizer
    return [p for piece, special in pretok.split_special(text) for p in ([piece] if special else pretok.pretokens(piece))]


def test_long_lists_made_by_threads_at_once(tok):
    """A list of over 65,536 ids has its pointers made without the GIL: threads making such
    lists at once each get their text's ids."""
    texts = [f"{k} " + SAMPLE * (60 + 7 * k) for k in range(3)]
    expected = [tok.encode(text) for text in texts]
    assert min(map(len, expected)) > 1 << 16
    results: dict[int, list[list[int]]] = {}

    def run(k: int) -> None:
        results[k] = [tok.encode(texts[(k + j) % 3]) for j in range(3)]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[k] == [expected[(k + j) % 3] for j in range(3)] for k in range(3))


@settings(max_examples=40)
@given(st.lists(texts, max_size=12), st.integers(2, 3))
def test_threads_sharing_a_full_cache_give_encode_of_each(small_caches, batch, workers):
    """A stream's threads share one cache; a few pre-tokens fill it, the rest go to each
    encoder's own cache (emptied every few pre-tokens)."""
    for small in small_caches:
        expected = [reference_encode(small, text) for text in batch]
        assert small.encode_batch(batch, workers) == expected
        assert list(small.encode_packed_stream(batch, "uint32", workers)) == [packed(ids, "I") for ids in expected]


@pytest.mark.parametrize("capacity", [1, 40, 1 << 17])
def test_encoders_in_parallel_over_one_shared_cache(tok, capacity):
    """Threads fill and read one cache at once (the GIL is released while they encode): every
    text gets the ids of an encoder alone, and the cache holds no more than its capacity."""
    lines = [f"{line} {n} {line[::-1]}" for n, line in enumerate(SAMPLE.splitlines() * 3)]
    texts = ["\n".join(lines[k::4]) * 20 for k in range(4)]
    alone = fresh(tok, tok.direct)
    expected = [alone.encode(text) for text in texts]
    shared = SharedCache(tok._ranks, tok._table, tok.direct, capacity)
    results: dict[int, list[list[int]]] = {}

    def run(k: int) -> None:
        encoder = tok._new_encoder(shared)
        results[k] = [encoder.encode(texts[(k + i) % 4]) for i in range(8)]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[k] == [expected[(k + i) % 4] for i in range(8)] for k in range(4))
    assert 0 < len(shared) <= capacity


def test_a_shared_cache_serves_only_encoders_of_its_model(tok):
    other = fresh(tok, not tok.direct)
    with pytest.raises(ValueError, match="SharedCache"):
        tok._new_encoder(SharedCache(other._ranks, other._table, other.direct, 10))
    with pytest.raises(ValueError, match="SharedCache"):
        tok._new_encoder(SharedCache(tok._ranks, tok._table, not tok.direct, 10))
    with pytest.raises(TypeError):
        Encoder(tok._ranks, tok._table, 0, tok.direct, 10, [], {})


def test_decode_takes_any_sequence_of_ints(tok):
    ids = tok.encode(SAMPLE)
    assert tok.decode(tuple(ids)) == tok.decode(array("I", ids)) == tok.decode(ids) == SAMPLE
    assert tok.decode([]) == ""


def test_packed_ids_become_the_same_ints(tok):
    """The threads hand a long text's ids over packed; ``Vocab.fill`` puts them into one list,
    threads filling its parts at once: the list ``encode`` gives, of the very same ints."""
    ids = tok.encode(SAMPLE)
    half = len(ids) // 2
    out = tok._table.unfilled(len(ids) * 200)
    filler = threading.Thread(target=tok._table.fill, args=(out, half, [packed(ids[half:], "I"), packed(ids * 199, "I")]))
    filler.start()
    tok._table.fill(out, 0, [packed(ids[:half], "I"), b""])
    filler.join()
    assert out == []  # nothing shown before it is all put
    tok._table.filled(out)
    assert out == ids * 200
    assert all(a is b for a, b in zip(out, ids * 200, strict=True))
    out = tok._table.unfilled(2)
    with pytest.raises(ValueError, match="4 bytes each"):
        tok._table.fill(out, 0, [b"\x01\x00\x00"])
    with pytest.raises(ValueError, match=f"token id {max(tok.vocab) + 1} is not in the vocabulary"):
        tok._table.fill(out, 0, [packed([ids[0], max(tok.vocab) + 1], "I")])
    with pytest.raises(IndexError):
        tok._table.fill(out, 1, [packed(ids[:2], "I")])
    assert out == []
    tok._table.fill(out, 0, [packed(ids[:2], "I")])
    tok._table.filled(out)
    assert out == ids[:2]
    with pytest.raises(TypeError):
        tok._table.filled(out)


@pytest.mark.parametrize("words", [1000, 3000, 60_000, (31 << 20) // 12 + 1000])
def test_a_texts_list_is_made_in_its_own_memory_or_its_encoders(words):
    """``encode``'s list is encoded in its own memory: room for an id a UTF-8 byte (up to 31
    MB), or after a text of 4,096 characters or more, for twice its ids a character and a
    quarter more. Ids that outgrow the room go on in the encoder's buffer, those so far moved
    there, and are made a list from there (here after English, whose ids a character are a
    third of these: the two largest); ids more than half the room have their pointers made
    in a block of their own (3,000 words). Either way they are ``encode_packed``'s, and the
    encoder's next text is whole."""
    tok = gpt2()
    assert tok.encode(SAMPLE) == reference_encode(tok, SAMPLE)
    text = "\0a " * words  # a token a byte, cut into chunks after each "a"
    ids = tok.encode(text)
    assert len(ids) == 3 * words
    assert ids == array(UINT32, tok.encode_packed(text)).tolist()
    assert tok.encode(SAMPLE) == reference_encode(tok, SAMPLE)


def test_kept_pieces_fill_a_long_texts_list(tok):
    """``Encoder.encode_into`` keeps the ids of a text's pieces one after another in the
    encoder (after none when first); ``Encoder.fill`` puts spans of them in a list from
    ``unfilled``, from two threads at once: the list ``encode`` gives, of the same ints."""
    text = SAMPLE * 3
    cut = tok.pretokenizer.safe_cut(text[: len(text) // 2])
    expected = tok.encode(text)
    ours, theirs = tok._new_encoder(), tok._new_encoder()
    assert ours is not None and theirs is not None
    assert theirs.encode_into(text, 0, 5, True) > 0  # gone at the next first piece
    head = theirs.encode_into(text, 0, cut, True)
    tail = ours.encode_into(text, cut, len(text), True)
    assert head + tail == len(expected)
    out = tok._table.unfilled(len(expected))
    filler = threading.Thread(target=theirs.fill, args=(out, [(0, 0, head)]))
    filler.start()
    ours.fill(out, [(head, 0, tail)])
    filler.join()
    assert out == []
    tok._table.filled(out)
    assert out == expected
    assert all(a is b for a, b in zip(out, expected, strict=True))
    first = ours.encode_into(text, 0, cut, True)
    assert ours.encode_into(text, cut, len(text), False) == tail  # kept after the first
    out = tok._table.unfilled(len(expected))
    for bad in ([(0, 0, len(expected) + 1)], [(1, 0, len(expected))], [(0, first + tail, 1)], [(-1, 0, 1)], [(0, 0)]):
        with pytest.raises((IndexError, TypeError)):
            ours.fill(out, bad)
    ours.fill(out, [(first, first, tail), (0, 0, first)])
    tok._table.filled(out)
    assert out == expected
    with pytest.raises(UnicodeEncodeError):
        ours.encode_into("ab\udc00", 0, 3, True)


def test_kept_pieces_fill_packed_ids(tok):
    """``Encoder.fill`` puts spans of kept ids in room from ``unfilled_ids`` too, from two
    threads at once: the ids ``encode_packed`` gives; a span that does not fit is refused."""
    text = SAMPLE * 3
    cut = tok.pretokenizer.safe_cut(text[: len(text) // 2])
    expected = tok.encode_packed(text)
    ours, theirs = tok._new_encoder(), tok._new_encoder()
    assert ours is not None and theirs is not None
    head = theirs.encode_into(text, 0, cut, True)
    tail = ours.encode_into(text, cut, len(text), True)
    out = unfilled_ids(head + tail)
    filler = threading.Thread(target=theirs.fill, args=(out, [(0, 0, head)]))
    filler.start()
    ours.fill(out, [(head, 0, tail)])
    filler.join()
    assert bytes(out) == expected
    for bad in ([(1, 0, head + tail)], [(0, tail, 1)]):
        with pytest.raises(IndexError):
            ours.fill(out, bad)
    with pytest.raises(TypeError):
        ours.fill(bytearray(len(expected)), [(0, 0, tail)])


@pytest.mark.parametrize("copies", [1, 300])
def test_the_ints_of_ids_outlive_every_list(tok, copies):
    """Lists hold the ints of ids uncounted: the ints are made once for the process, their
    counts far above what any number of lists let go of, and are never freed. Were a count
    brought to 0 by the lists dropped below, its int would be freed while later lists, and
    those of another tokenizer, still hold it."""
    texts = [SAMPLE * copies, "", *SAMPLE.splitlines()]
    expected = [reference_encode(tok, text) for text in texts]
    for _ in range(3):
        one = tok.encode(texts[0])
        many = tok.encode_batch(texts, 1)
        threaded = tok.encode_batch(texts, 2)
        assert one == expected[0] and many == expected and threaded == expected
        del one, many, threaded
        gc.collect()
    other = fresh(tok, tok.direct)
    ids = other.encode(texts[0])
    del other
    gc.collect()
    assert ids == expected[0]
    assert all(a is b for a, b in zip(ids, tok.encode(texts[0]), strict=True))
    assert all(sys.getrefcount(i) > sys.maxsize >> 8 for i in set(ids) if i > 256)  # 0-256: the interpreter's own


def test_an_id_far_beyond_the_rest_makes_no_ints_for_the_ids_between():
    """The ints are made for entries only: a vocabulary of 256 bytes and one id at a million
    holds about three words an id up to it (its spans, its ints' pointers and the process's),
    not an int for every id between (28 bytes more each)."""
    far = 1_000_000
    tracemalloc.start()
    try:
        vocab = Vocab({i: bytes([i]) for i in range(256)} | {far: b"<|far|>"})
        grown, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert vocab.decode([far, 104, 105]) == "<|far|>hi"
    assert grown < 32 * far


def test_the_hot_table_grows_keeping_what_it_holds(tok):
    """Past 4,096 short pre-tokens taken in, an encoder's hot table grows to its largest,
    the pre-tokens it held moved over: each text encodes the same before and after."""
    rng = random.Random(7)
    words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 7))) for _ in range(9000)]
    first, rest = " ".join(words[:3000]), " ".join(words[3000:])
    encoder = tok._new_encoder()
    ids = encoder.encode(first)
    assert ids == reference_encode(tok, first)
    assert encoder.encode(rest) == reference_encode(tok, rest)
    assert encoder.encode(first) == ids


def test_no_texts_are_no_ids(tok):
    encoder = tok._new_encoder()
    ids, ends = encoder.encode_ends([])
    assert (bytes(ids), ends) == (b"", b"")
    assert encoder.encode_packed_many([], 2) == b""


def test_worker_threads_hand_over_packed_ids_and_their_ends(tok):
    """A worker thread packs its texts' ids with their ends; ``Vocab.lists`` makes the lists
    ``encode`` gives, and refuses ids that are no entry and ends out of order."""
    texts = [*SAMPLE.splitlines(), "", SAMPLE * 300]
    packed_ids, ends = tok._new_encoder().encode_ends(texts)
    assert tok._table.lists(packed_ids, ends) == [tok.encode(text) for text in texts]
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tok._table.lists(packed([1, max(tok.vocab) + 1], "I"), struct.pack("n", 2))
    with pytest.raises(ValueError, match="not in the vocabulary"):  # the lists filled before it are let go whole
        tok._table.lists(packed([300] * 5000 + [300, max(tok.vocab) + 1], "I"), struct.pack("2n", 5000, 5002))
    assert tok._table.lists(packed([300], "I"), struct.pack("n", 1)) == [[300]]
    with pytest.raises(ValueError, match="out of order"):
        tok._table.lists(packed([1, 2], "I"), struct.pack("2n", 2, 1))
    with pytest.raises(ValueError, match="a size each"):
        tok._table.lists(packed([1], "I"), bytes(struct.calcsize("n") - 1))


def test_lists_of_ids_are_left_to_reference_counting(tok):
    """A list of ints is in no cycle: the cycle collector does not walk the lists encode makes."""
    assert not gc.is_tracked(tok.encode(SAMPLE))
    assert not any(map(gc.is_tracked, tok.encode_batch(SAMPLE.splitlines(), workers=2)))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("enabled", [True, False])
def test_making_a_batchs_lists_sets_off_no_collection(tok, workers, enabled):
    """Each 700 objects made set off a collection of the youngest: the thousands of lists of
    a batch in one thread set off none while they are made (but for one after), and the
    collector is left on or off as it was, in threads too."""
    texts = [f"{line} {n}" for n, line in enumerate(SAMPLE.splitlines() * 40)]
    expected = [tok.encode(text) for text in texts]
    (gc.enable if enabled else gc.disable)()
    try:
        gc.collect()
        before = gc.get_stats()[0]["collections"]
        assert tok.encode_batch(texts, workers=workers) == expected
        during = gc.get_stats()[0]["collections"] - before
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
    assert len(texts) > 4 * 700 and (workers > 1 or during <= 1)


def test_the_cache_lasts_across_calls_and_threads(monkeypatch, tok):
    """One cache for the tokenizer: what one call merges, the next finds, in any thread; the
    threads' encoders are kept for the next call, and the ids never change. A batch of one
    unit is encoded in this thread."""
    fresh_tok = fresh(tok, tok.direct)
    assert fresh_tok.encode_batch(["one unit"], workers=2) == [fresh_tok.encode("one unit")]
    assert not fresh_tok._idle
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", 64)
    ids = fresh_tok.encode(SAMPLE)
    cache = fresh_tok._shared
    assert cache is not None and len(cache) > 0
    lines = SAMPLE.splitlines()
    expected = [ids] + [fresh_tok.encode(line) for line in lines]
    assert fresh_tok.encode_batch([SAMPLE, *lines], workers=2) == expected
    encoders = set(map(id, fresh_tok._idle))
    assert fresh_tok._shared is cache and 1 <= len(encoders) <= 2
    assert fresh_tok.encode_batch([SAMPLE, *lines], workers=2) == expected
    assert set(map(id, fresh_tok._idle)) == encoders  # the same encoders, their hot tables warm
    fresh_tok.direct = not tok.direct
    assert fresh_tok._shared is None and not fresh_tok._idle
    workers = [thread for pool in fresh_tok._pools.values() for thread in pool._threads]
    assert workers  # kept for the next call
    del fresh_tok
    gc.collect()
    for thread in workers:
        thread.join(timeout=10)  # they end when the tokenizer goes
        assert not thread.is_alive()


def test_turning_direct_off_empties_the_cache():
    """An entry that does not encode to itself: direct on gives it whole, off merges it."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"abc"}
    tok = Tokenizer(vocab, [(b"b", b"c")])
    tok.direct = True
    assert tok.encode("abc") == [257]
    tok.direct = False
    assert tok.encode("abc") == [ord("a"), 256]


def test_long_entries_found_whole():
    """Direct: a pre-token of over 16 bytes that is an entry no merge makes is that entry
    (found past a filter of the long entries, then in their table), and one that is not an
    entry, however like one, is merged."""
    rng = random.Random(7)
    words = sorted({"".join(rng.choices("abcdefgh", k=rng.randint(17, 80))) for _ in range(3000)})
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"} | {257 + k: w.encode() for k, w in enumerate(words)}
    tok = Tokenizer(vocab, [(b"a", b"b")])
    tok.direct = True
    assert [tok.encode(w) for w in words] == [[257 + k] for k in range(len(words))]
    near = [w[:-1] + ("a" if w[-1] != "a" else "b") for w in words] + [w + "a" for w in words]
    assert [tok.encode(w) for w in near] == [reference_encode(tok, w) for w in near]
    text = " ".join(words[:300] + near[:300])
    assert tok.encode(text) == reference_encode(tok, text)


# Entries of 1-18 bytes of "!" and NUL, which differ in their last bytes or only in their
# length (a short key masks off what lies beyond a pre-token: b"!" and b"!\0" share their words).
_nul_entries = sorted({b"!" * k + b"\0" * z for k in range(1, 10) for z in range(0, 10) if k + z <= 18}, key=len)


@settings(max_examples=100)
@given(st.lists(st.sampled_from(["!", "\0", "!\0", "!!!!!!!!", "\0\0\0\0\0\0\0\0", " "]), max_size=40).map("".join))
def test_entries_told_apart_by_their_last_bytes_and_length(text):
    """Direct: a pre-token that is an entry is that entry, found by its short key and length
    up to 16 bytes and by its bytes beyond; a pre-token that is none is merged."""
    extra = [e for e in _nul_entries if len(e) > 1]
    vocab = {i: bytes([i]) for i in range(256)} | {256 + k: entry for k, entry in enumerate(extra)}
    tok = Tokenizer(vocab, [(b"!", b"!")])
    tok.direct = True
    assert tok.encode(text) == reference_encode(tok, text)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(texts, max_size=10), st.integers(2, 3), st.sampled_from([(4, 8), (16, 8), (64, 32)]))
def test_long_texts_are_cut_and_short_ones_grouped(monkeypatch, tok, batch, workers, sizes):
    """With units and pieces of a few characters, texts are grouped into units and long ones
    cut at safe cuts into pieces encoded apart (``safe_cut``, of the last few characters
    before a piece's end where the text holds no special token): the ids are ``encode``'s."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", sizes[0])
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", sizes[0])
    monkeypatch.setattr("engine.encode.tokenizer.PIECE_CHARS", sizes[1])
    monkeypatch.setattr("engine.encode.tokenizer.CUT_WINDOW", sizes[1] // 2)
    long = [text * 5 for text in batch]
    expected = [tok.encode(text) for text in long]
    assert tok.encode_batch(long, workers) == expected
    assert list(tok.encode_packed_stream(long, "uint32", workers)) == [packed(ids, "I") for ids in expected]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts, st.integers(2, 3), st.sampled_from([(4, 8), (16, 8), (64, 32)]))
def test_one_long_text_is_taken_from_both_ends(monkeypatch, tok, text, workers, sizes):
    """A batch of one long text: the helpers take its pieces from the start, this thread
    from the end; the list and the flat ids are ``encode``'s, and the helpers' encoders go
    back to be taken again (a text of one piece is encoded in this thread alone)."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", sizes[0])
    monkeypatch.setattr("engine.encode.tokenizer.PIECE_CHARS", sizes[1])
    monkeypatch.setattr("engine.encode.tokenizer.CUT_WINDOW", sizes[1] // 2)
    long = text * 9
    expected = tok.encode(long)
    assert tok.encode_batch([long], workers) == [expected]
    assert unflattened(tok.encode_batch_flat((long,), workers)) == [expected]
    assert len(tok._idle) >= (workers - 1 if len(long) > 2 * sizes[0] and len(list(tok._pieces(long, workers))) > 1 else 0)


@pytest.mark.parametrize("flat", [False, True])
def test_a_lists_units_are_taken_from_both_ends(monkeypatch, tok, flat):
    """A list's units in two threads: the helper takes them from the start, this thread
    from the end (so each meets the same units in the next call), a long text's pieces
    among them; the ids are ``encode``'s, in order."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.PIECE_CHARS", 128)
    monkeypatch.setattr("engine.encode.tokenizer.CUT_WINDOW", 64)
    batch = [f"text {i} " * 3 for i in range(60)]
    batch[10] = SAMPLE * 6  # a long text, in pieces

    def key(unit: T.Unit) -> tuple[object, ...]:
        return (id(unit[0]), unit[1], unit[2]) if isinstance(unit, tuple) else (unit[0], len(unit))

    order = {key(unit): k for k, (unit, _) in enumerate(tok._units(batch, 2))}
    takers: list[tuple[int, bool]] = []
    ended = T._ended_unit

    def spy(encoder: Encoder, unit: tuple[T.Unit, int]) -> object:
        takers.append((order[key(unit[0])], threading.current_thread() is threading.main_thread()))
        return ended(encoder, unit)

    monkeypatch.setattr(T, "_ended_unit", spy)
    for _ in range(2):
        takers.clear()
        got = unflattened(tok.encode_batch_flat(batch, 2)) if flat else tok.encode_batch(batch, 2)
        assert got == [tok.encode(text) for text in batch]
    mine = sorted(k for k, main in takers if main)
    helpers = sorted(k for k, main in takers if not main)
    assert sorted(mine + helpers) == list(range(len(takers)))
    assert not mine or not helpers or max(helpers) < min(mine)  # a prefix and a suffix


def test_the_helpers_start_before_the_last_items_are_found(tok):
    """The items (a long text's pieces, a list's units) are found in this thread while a
    helper encodes the first ones: finding the fourth waits for the helper's first item."""
    helper_began = threading.Event()
    done: dict[int, bool] = {}

    def items() -> Iterator[int]:
        yield from range(3)
        waited = helper_began.wait(timeout=10)
        yield from range(3, 8) if waited else ()

    def encode(encoder: Encoder, k: int, item: int, first: bool) -> None:
        if threading.current_thread() is not threading.main_thread():
            helper_began.set()
        done[k] = item == k

    tok._from_both_ends(items(), 2, encode)
    assert helper_began.is_set()
    assert done == {k: True for k in range(8)}


@pytest.mark.parametrize("count", [0, 1, 2, 5])
def test_items_that_fail_to_be_found_stop_the_helpers(tok, count):
    """An error finding the items is raised once the helpers have stopped; fewer than two
    items are encoded in this thread alone."""
    threads: set[bool] = set()

    def items() -> Iterator[int]:
        yield from range(count)
        raise LookupError("no more")

    def encode(encoder: Encoder, k: int, item: int, first: bool) -> None:
        threads.add(threading.current_thread() is threading.main_thread())

    with pytest.raises(LookupError):
        tok._from_both_ends(items(), 2, encode)
    assert threads <= {True, False} and (count >= 2 or threads <= {True})
    text = SAMPLE * 40
    assert tok.encode_batch([text], 2) == [tok.encode(text)]


def test_a_helper_ending_a_unit_with_none_left_makes_its_lists(monkeypatch, tok):
    """Lists in two threads: a helper that ends a unit when every unit is taken makes that
    unit's lists itself, rather than wait while this thread makes them (here this thread
    holds its one unit long); the lists are ``encode``'s, each made once."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", 64)
    batch = [f"text {i} " * 3 for i in range(60)]
    expected = [tok.encode(text) for text in batch]
    assert tok.encode_batch(batch, 2) == expected  # the helper's encoder made
    ended = T._ended_unit

    def slow(encoder: Encoder, unit: tuple[T.Unit, int]) -> object:
        if threading.current_thread() is threading.main_thread():
            time.sleep(0.2)  # the helper takes every other unit meanwhile
        return ended(encoder, unit)

    class Table:
        def __init__(self, table: Vocab) -> None:
            self.table, self.makers = table, list[bool]()

        def lists(self, packed: bytes, ends: bytes) -> list[list[int]]:
            self.makers.append(threading.current_thread() is threading.main_thread())
            return self.table.lists(packed, ends)

        def __getattr__(self, name: str) -> object:
            return getattr(self.table, name)

    table = Table(tok._table)
    monkeypatch.setattr(T, "_ended_unit", slow)
    monkeypatch.setattr(tok, "_table", table)
    assert tok.encode_batch(batch, 2) == expected
    assert False in table.makers and len(table.makers) == len(list(tok._units(batch, 2)))


@pytest.mark.parametrize("at", [0, 0.5, 1])
def test_a_bad_piece_of_one_long_text_is_raised_and_the_next_call_works(monkeypatch, tok, at):
    """A lone surrogate in any piece of one long text, whichever end's thread meets it."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.PIECE_CHARS", 256)
    good = SAMPLE * 4
    where = min(int(len(good) * at), len(good) - 1)
    bad = good[:where] + "\udc00" + good[where:]
    with pytest.raises(UnicodeEncodeError):
        tok.encode_batch([bad], workers=2)
    assert tok.encode_batch([good], workers=2) == [tok.encode(good)]


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.sampled_from(["", "a", "word " * 3, "x" * 40, "y" * 200]), max_size=30),
    st.integers(1, 3),
    st.integers(1, 120),
    st.sampled_from([0, 3, 64]),
    st.sampled_from([list, tuple]),
)
def test_a_lists_units_found_in_c_are_those_of_the_loop(monkeypatch, tok, texts, threads, unit_chars, text_chars, kind):
    """``unit_ends`` cuts a list or tuple into the units the loop over an iterator makes, a
    long text's pieces among them (a text of more than ``2 * UNIT_CHARS`` is long)."""
    monkeypatch.setattr("engine.encode.tokenizer._TEXT_CHARS", text_chars)
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", unit_chars)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", unit_chars)
    monkeypatch.setattr("engine.encode.tokenizer.PIECE_CHARS", 16)
    monkeypatch.setattr("engine.encode.tokenizer.CUT_WINDOW", 8)
    assert list(tok._units(kind(texts), threads)) == list(tok._units(iter(texts), threads))


def test_a_list_with_an_item_not_a_str_goes_text_by_text(tok):
    assert unit_ends(["a", 1], 10, 10, 1, 0, 100) is None
    assert unit_ends(["a", 1], 10, 100, 2, 0, 100) is None
    with pytest.raises(TypeError):
        list(tok._units(["a", 1], 2))


def test_a_list_of_texts_goes_in_units_of_a_share_of_its_size(tok):
    """A list or tuple in threads goes in units of about a ``UNITS_A_THREAD``-th of each
    thread's share of its characters, from ``UNIT_CHARS`` up to ``MAX_UNIT_CHARS``; other
    iterables, one thread, or items that are not all str, in units of ``UNIT_CHARS``."""

    def counts(texts: list[str] | tuple[str, ...] | Iterator[str], threads: int) -> list[int]:
        return [len(unit) for unit, _ in tok._units(texts, threads)]

    def taken(limit: int, chars: int) -> int:
        """How many texts of ``chars`` characters a unit of ``limit`` takes."""
        return -(-limit // (chars + T._TEXT_CHARS))

    share = 4_000_000 // (T.UNITS_A_THREAD * 2)
    assert counts(["x" * 100_000] * 40, 2)[0] == taken(share, 100_000) > 1
    assert counts(("x" * 100_000,) * 400, 2)[0] == taken(T.MAX_UNIT_CHARS, 100_000)
    assert counts(["x" * 1000] * 400, 2)[0] == taken(T.UNIT_CHARS, 1000)
    assert counts(iter(["x" * 100_000] * 40), 2) == counts(["x" * 100_000] * 40, 1) == [1] * 40
    with pytest.raises(ValueError):
        unit_ends(["x"], 1, 2, 0, 0, 10)


def test_a_batch_in_large_units_encodes_as_encode_does(tok):
    """Texts of a list grouped by its size: the threads' ids are ``encode``'s."""
    texts = [line * 40 for line in SAMPLE.splitlines()] * 30
    assert max(sum(map(len, unit)) for unit, _ in tok._units(texts, 2)) > T.UNIT_CHARS
    assert tok.encode_batch(texts, 2) == [tok.encode(text) for text in texts]
    with pytest.raises(TypeError):
        tok.encode_batch([*texts, 7], 2)


@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("at", [0, 1, 2, 17, 40])
def test_a_bad_text_in_any_unit_is_raised_and_the_threads_go_on(monkeypatch, tok, at, flat):
    """Whichever thread meets it (a helper, taking units from the start, or this one, from
    the end), a lone surrogate is the UnicodeEncodeError str.encode gives, nothing waits
    forever, and the next call gives encode's ids."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 64)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", 64)
    batch = [SAMPLE * 50] + [f"text {i} " * 20 for i in range(40)]  # a helper busy with the first while this thread takes the next
    batch[at] = "bad \udc00 text"
    raised: list[Exception] = []

    def call() -> None:
        try:
            tok.encode_batch_flat(batch, workers=2) if flat else tok.encode_batch(batch, workers=2)
        except Exception as e:
            raised.append(e)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(60)
    assert not caller.is_alive(), "encode_batch still waiting after 60 s"
    assert [type(e) for e in raised] == [UnicodeEncodeError]
    good = batch[:at] + batch[at + 1 :]
    expected = [tok.encode(text) for text in good]
    assert (unflattened(tok.encode_batch_flat(good, workers=2)) if flat else tok.encode_batch(good, workers=2)) == expected


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(texts, st.booleans()), max_size=6), max_size=5), st.integers(1, 3), st.sampled_from([None, 7]))
def test_packed_batches_join_each_batch_with_end_of_text_ids(monkeypatch, tok, batches, workers, eot):
    """A dataset's batches: each batch's ids joined, ``eot`` after the texts that end a
    document, whatever the units and pieces the threads get."""
    monkeypatch.setattr("engine.encode.tokenizer.UNIT_CHARS", 16)
    monkeypatch.setattr("engine.encode.tokenizer.MAX_UNIT_CHARS", 16)
    monkeypatch.setattr("engine.encode.tokenizer.PIECE_CHARS", 8)
    given_batches = [([text * 3 for text, _ in batch], [end for _, end in batch]) for batch in batches]
    expected = [
        b"".join(packed(tok.encode(text) + ([eot] if end and eot is not None else []), "H") for text, end in zip(*batch, strict=True))
        for batch in given_batches
    ]
    assert list(tok.encode_packed_batches(iter(given_batches), "uint16", eot, workers)) == expected


REUSED_LIST = """
import ctypes, sys
from tests.test_encode_conformance import gpt2
from tests.test_tokenizer import SAMPLE
tok = gpt2()
text = SAMPLE * (2_000_000 // len(SAMPLE))
threads = int(sys.argv[1])
def items(ids):  # the address of a list's items (PyListObject: refcount, type, size, items)
    return ctypes.c_void_p.from_address(id(ids) + 3 * ctypes.sizeof(ctypes.c_void_p)).value
first = tok.encode(text) if threads == 1 else tok.encode_batch([text], threads)[0]
where, size = items(first), len(first)
del first
second = tok.encode(text) if threads == 1 else tok.encode_batch([text], threads)[0]
print(size, where == items(second))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the encoder tunes glibc's malloc only")
@pytest.mark.parametrize("threads", [1, 2])
def test_a_long_texts_list_takes_the_last_ones_memory(threads):
    """In a fresh process, the second list of a long text's ids (4 MB of items or more) is
    put where the first one's were, freed: glibc gave the first a mapping of its own, which
    went back to the system, and the second new heap, until the encoder raised its
    thresholds before the first."""
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", REUSED_LIST, str(threads)], capture_output=True, text=True, cwd=root, check=True)
    size, reused = out.stdout.split()
    assert int(size) * 8 >= 4 << 20
    assert reused == "True"
