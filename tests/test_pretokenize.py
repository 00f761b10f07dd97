"""Pre-tokenization: the fast counting paths agree with a plain regex count."""

from __future__ import annotations

import pickle
from collections import Counter
from contextlib import ExitStack
from itertools import pairwise
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import PATTERNS, PreTokenizer
from engine.corpus._tally import Tally
from engine.corpus.counting import count_file
from engine.corpus.pretokenize import FAMILIES
from engine.corpus.shards import Block, CountSettings, PretokenTally, Shard, count_block, stream_blocks
from engine.corpus.shared_blocks import SharedBlocks, attach, shared_block
from engine.corpus.sources import JSONL, TEXT

SPECIALS = ["<|endoftext|>", "<|endoftext|><|endoftext|>", "<|pad|>"]
PIECES = [
    "a",
    "ab",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    " \n",
    "\r\n",
    "\t",
    "word",
    " word",
    "Word",
    "don't",
    "'s",
    "'LL",
    "12",
    "12345",
    " 7",
    ".",
    "...",
    "!\n",
    "。",
    "你好",
    "😀",
    "é",
    "e\u0301",
    "<|endoftext|>",
    "<|pad|>",
    "<|endo",
    "ftext|>",
    "x\n ",
    " \n\n ",
    "\r",
    "/",
    "\u3000",
    "\u3000\u3000",
    "。\r\n",
]
texts = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


def plain_count(text: str, pattern: str, specials: list[str]) -> Counter[bytes]:
    """Regex over each piece between special tokens, no shortcuts."""
    ordered = sorted(specials, key=len, reverse=True)
    pieces = regex.split("|".join(map(regex.escape, ordered)), text) if ordered else [text]
    return Counter(tok.encode() for piece in pieces for tok in regex.findall(PATTERNS[pattern], piece))


@pytest.mark.parametrize("pattern", list(PATTERNS))
@settings(max_examples=150)
@given(text=texts)
def test_count_equals_plain_regex_count(pattern, text):
    assert PreTokenizer(pattern, SPECIALS).count(text) == plain_count(text, pattern, SPECIALS)


@pytest.mark.parametrize("pattern", list(PATTERNS))
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, block=st.integers(1, 64), workers=st.sampled_from([1, 2]))
def test_streamed_count_equals_whole_count(monkeypatch, tmp_path, pattern, text, block, workers):
    """Blocks cut by safe_cut, counted apart (in parallel, or here into one tally), add up
    to the whole."""
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)  # workers even for a small file
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    pretok = PreTokenizer(pattern, SPECIALS)
    assert count_file(path, pretok, workers=workers, block_size=block) == pretok.count(text)


@pytest.mark.parametrize("shared", [False, True], ids=["pickled", "in shared slots"])
@pytest.mark.parametrize("pattern", [*PATTERNS, r"[a-z]+|\s+"])
@settings(max_examples=60)
@given(text=texts, block=st.integers(1, 160))
def test_a_streams_blocks_counted_apart_add_up_to_the_whole(tmp_path_factory, pattern, shared, text, block):
    """A stream is cut into blocks in bytes (or, under a pattern of its own, read as text
    here) that count apart, in any process, as they do within the whole: handed on pickled,
    or read into slots of shared memory."""
    path = tmp_path_factory.mktemp("stream") / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    settings = CountSettings(pattern, tuple(SPECIALS), block_bytes=block)
    assert counted_in_blocks(path, settings, shared) == settings.pretokenizer.count(text)


def counted_in_blocks(path: Path, settings: CountSettings, shared: bool = False) -> Counter[bytes]:
    """A text file's counts as its blocks, read as a stream's, counted apart add them up;
    ``shared``: read into two slots of shared memory, each given back once its block is
    counted (the reader waits for one while both are held), and the slots mapped again as a
    counting process maps them."""
    stream = Shard(str(path), TEXT, None, 0, stream=True)
    counted: Counter[bytes] = Counter()
    slots = SharedBlocks(2, 2 * settings.block_bytes) if shared else None
    with ExitStack() as stack:
        if slots is not None:
            stack.callback(slots.close)
            mapped = stack.enter_context(attach(slots.path))
        blocks, _ = stack.enter_context(stream_blocks(stream, settings, None, slots))
        for each in blocks:
            tally = PretokenTally(settings.pretokenizer)
            if each.slot < 0:
                count_block(pickle.loads(pickle.dumps(each)), stream, settings, tally)
            else:
                assert slots is not None
                with shared_block(mapped, slots.size, each.slot, len(each.data)) as data:
                    count_block(Block(data, each.offset), stream, settings, tally)
                slots.give(each.slot)
            counted += tally.counter()
    return counted


@settings(max_examples=80)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda line: line.replace(b"\n", b"")), max_size=60),
    last_newline=st.booleans(),
    block=st.integers(1, 64),
)
def test_a_jsonl_stream_in_shared_slots_is_whole_lines_numbered(tmp_path_factory, lines, last_newline, block):
    """A JSONL stream read into slots of shared memory (one, given back as each block is
    taken): blocks of whole lines, each with its byte and the lines before it, lines longer
    than a slot held across it."""
    data = b"\n".join(lines) + (b"\n" if lines and last_newline else b"")
    path = tmp_path_factory.mktemp("jsonl") / "docs.jsonl"
    path.write_bytes(data)
    slots = SharedBlocks(1, 2 * block)
    got = []
    with stream_blocks(Shard(str(path), JSONL, None, 0, stream=True), CountSettings(block_bytes=block), None, slots) as (blocks, _):
        for each in blocks:
            got.append((bytes(each.data), each.offset, each.lines_before))
            if each.slot >= 0:
                slots.give(each.slot)
    slots.close()
    assert b"".join(piece for piece, _, _ in got) == data
    for piece, offset, lines_before in got:
        assert data[offset : offset + len(piece)] == piece and lines_before == data[:offset].count(b"\n")
    assert all(piece.endswith(b"\n") for piece, _, _ in got[:-1])


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_blocks_of_every_size_end_where_a_pre_token_starts(tmp_path, pattern):
    """Lines with runs of newlines, spaces and tabs between them, read in blocks of every
    size from the smallest that can hold a cut: none ends inside such a run."""
    text = "ab\n\ncd \n ef\n\t\ngh。\n\n你好\n  x\n<|pad|>\n\n" * 30
    path = tmp_path / "lines.txt"
    path.write_text(text, encoding="utf-8", newline="")
    whole = PreTokenizer(pattern, SPECIALS).count(text)
    for size in range(60, 140):
        for shared in (False, True):
            assert counted_in_blocks(path, CountSettings(pattern, tuple(SPECIALS), block_bytes=size), shared) == whole, (size, shared)


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_a_text_without_spaces_is_read_in_blocks_of_the_size_asked(tmp_path, pattern):
    """Chinese lines end in a full stop, after which no cut of ``text_cut`` falls: the start
    of each line is one, so a block stays near the size asked and memory bounded."""
    path = tmp_path / "novel.txt"
    path.write_text("孙悟空大闹天宫。\n" * 20000, encoding="utf-8")
    stream = Shard(str(path), TEXT, None, 0, stream=True)
    with stream_blocks(stream, CountSettings(pattern, tuple(SPECIALS), block_bytes=4096), None) as (blocks, _):
        sizes = [len(block.data) for block in blocks]
    assert sum(sizes) == path.stat().st_size
    assert len(sizes) > 50 and max(sizes) < 2 * 4096
    slots = SharedBlocks(1, 2 * 4096)  # one slot: each block given back before the next is read
    with stream_blocks(stream, CountSettings(pattern, tuple(SPECIALS), block_bytes=4096), None, slots) as (blocks, _):
        in_slots = []
        for block in blocks:
            in_slots.append((block.slot, len(block.data)))
            slots.give(block.slot)
    slots.close()
    assert {slot for slot, _ in in_slots} == {0}
    assert sum(size for _, size in in_slots) == path.stat().st_size and max(size for _, size in in_slots) < 2 * 4096


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
@settings(max_examples=40)
@given(
    text=st.lists(st.sampled_from([p for p in PIECES if not p.isspace() and " " not in p and "\n" not in p]), max_size=400).map("".join),
    block=st.integers(1, 64),
)
def test_long_text_without_a_cut_streams_like_the_whole(tmp_path_factory, pattern, text, block):
    """Text with no space or newline (one long pre-token, or runs of them between special
    tokens) is held across blocks and still counts as the whole does: read from a file, or
    as a stream into slots of shared memory that it overflows."""
    path = tmp_path_factory.mktemp("long") / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    pretok = PreTokenizer(pattern, SPECIALS)
    assert count_file(path, pretok, workers=1, block_size=block) == pretok.count(text)
    settings = CountSettings(pattern, tuple(SPECIALS), block_bytes=block)
    assert counted_in_blocks(path, settings, shared=True) == pretok.count(text)


@settings(max_examples=100)
@given(text=st.text(max_size=60))
def test_custom_pattern_keeps_the_text_between_matches(text):
    """A pattern that does not match everything still loses no text (HF Split, Isolated)."""
    pretok = PreTokenizer(r"[a-z]+|\d")
    assert "".join(pretok.pretokens(text)) == text
    from engine import Tokenizer, Trainer

    trainer = Trainer.from_text("the cat, 12 sat on the mat" + text, 300, pattern=r"[a-z]+|\d")
    trainer.run()
    tokenizer = Tokenizer.from_trainer(trainer)
    assert tokenizer.decode(tokenizer.encode(text)) == text


@pytest.mark.parametrize("pattern", list(PATTERNS))
@settings(max_examples=200)
@given(text=texts, more=texts)
def test_a_safe_cut_changes_no_pretoken(pattern, text, more):
    """Whatever follows, the text before ``safe_cut`` splits as it does inside the whole,
    and the rest as the remainder of the whole."""
    cut = PreTokenizer(pattern, SPECIALS).safe_cut(text)
    whole = text + more
    assert plain_tokens(whole[:cut], pattern) + plain_tokens(whole[cut:], pattern) == plain_tokens(whole, pattern)


LINES = ["。", "!", "\n", "\r\n", "/", " ", "\t", "\u3000", "你好", "ab", "12", "<|pad|>", "<|endoftext|>"]
"""Where lines meet: punctuation before a newline (which it takes in), whitespace after one."""


@pytest.mark.parametrize("pattern", list(PATTERNS))
@settings(max_examples=300)
@given(text=st.lists(st.sampled_from(LINES), max_size=60).map("".join), more=st.lists(st.sampled_from(LINES), max_size=8).map("".join))
def test_a_safe_cut_between_lines_changes_no_pretoken(pattern, text, more):
    """As above, on text made of little but line ends, punctuation, slashes and indents."""
    cut = PreTokenizer(pattern, SPECIALS).safe_cut(text)
    whole = text + more
    assert plain_tokens(whole[:cut], pattern) + plain_tokens(whole[cut:], pattern) == plain_tokens(whole, pattern)


def plain_tokens(text: str, pattern: str) -> list[str]:
    """Special tokens and the regex's pre-tokens between them, in order."""
    ordered = "|".join(map(regex.escape, sorted(SPECIALS, key=len, reverse=True)))
    out, start = [], 0
    for m in regex.finditer(ordered, text):
        out += regex.findall(PATTERNS[pattern], text[start : m.start()]) + [m.group()]
        start = m.end()
    return out + regex.findall(PATTERNS[pattern], text[start:])


@pytest.mark.parametrize("name", list(PATTERNS))
def test_named_patterns_are_known_by_their_text(name):
    """Worker processes and loaded files pass the regex itself: the fast paths still apply."""
    assert PreTokenizer(PATTERNS[name]).pattern_name == name
    assert PreTokenizer(PATTERNS[name]).chunked


@pytest.mark.parametrize("workers", [1, 2])
def test_read_progress_only_goes_forward(monkeypatch, tmp_path, workers):
    """The bytes-read progress only grows, in this process and with workers."""
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)
    path = tmp_path / "corpus.txt"
    path.write_text("some words here, and 12 more\n" * 4000, encoding="utf-8")
    seen: list[int] = []
    count_file(path, PreTokenizer("gpt2"), workers=workers, block_size=1024, progress=lambda _, done, total: seen.append(done))
    assert seen == sorted(seen) and seen[-1] == path.stat().st_size


# Spaces and other whitespace (ASCII and not) around 1-, 2- and 4-byte characters. A str is
# stored with 1-, 2- or 4-byte code units by its widest character, so each alphabet below
# reaches one more kind.
LATIN1 = " \t\n\r\x0b\x0c\x1c\x85\xa0aé,"
BMP = LATIN1 + "\u3000\u2028\u2029\u1680\u200b你。"
WIDE = BMP + "😀𝔘"
kinds_text = st.one_of(
    st.text(st.sampled_from(LATIN1), max_size=40),
    st.text(st.sampled_from(BMP), max_size=40),
    st.text(st.sampled_from(WIDE), max_size=40),
    st.text(max_size=40),
)


def regex_counts(texts: list[str], pattern: str) -> dict[bytes, int]:
    """The pre-token counts of the texts by ``regex``, in the order first seen."""
    counts: dict[bytes, int] = {}
    for text in texts:
        for tok in regex.findall(PATTERNS[pattern], text):
            counts[tok.encode()] = counts.get(tok.encode(), 0) + 1
    return counts


def table_items(table: tuple[bytes, bytes, bytes]) -> list[tuple[bytes, int]]:
    words, ends, counts = table
    stops = memoryview(ends).cast("q").tolist()
    return list(zip((words[a:b] for a, b in pairwise([0, *stops])), memoryview(counts).cast("q").tolist(), strict=True))


@pytest.mark.parametrize("pattern", FAMILIES)
@settings(max_examples=200)
@given(pieces=st.lists(kinds_text, min_size=1, max_size=4))
def test_tally_counts_as_regex_findall(pattern, pieces):
    """The C tally counts what regex's findall gives, for every kind of str, text after text,
    in the order first seen; its table holds the same, sorted or not."""
    family = PreTokenizer(pattern).family_id
    tally = Tally(family)
    for piece in pieces:
        tally.add(piece)
    want = regex_counts(pieces, pattern)
    assert list(tally.counts().items()) == list(want.items())
    assert len(tally) == len(want)
    assert table_items(tally.table()) == list(want.items())
    assert table_items(tally.table(True)) == sorted(want.items())


@pytest.mark.parametrize("specials", [SPECIALS, ["<|end", "ftext|>", "<|endoftext|>"]])
@pytest.mark.parametrize("pattern", FAMILIES)
@settings(max_examples=200)
@given(text=texts, junk=st.lists(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80"]), max_size=1))
def test_a_text_counted_from_its_bytes_counts_as_from_its_str(specials, pattern, text, junk):
    """``add_utf8`` cuts out the special tokens as ``split_special`` does (overlapping ones
    too) and counts the rest as ``add`` counts the str; bytes that are not UTF-8 (a stray
    byte, a cut-off character, a surrogate, an overlong form, past U+10FFFF) count nothing."""
    pretok = PreTokenizer(pattern, specials)
    tally = Tally(pretok.family_id)
    data = text.encode()
    cut = len(data) // 2
    bad = data[:cut] + b"".join(junk) + data[cut:]
    try:
        valid, want = True, pretok.count(bad.decode())
    except UnicodeDecodeError:
        valid, want = False, Counter()
    assert tally.add_utf8(bad, tuple(s.encode() for s in specials)) is valid
    assert tally.counts() == want


@settings(max_examples=100)
@given(st.lists(st.text(st.sampled_from("ab\x00\x01é"), max_size=14), min_size=1, max_size=60))
def test_sorted_table_orders_words_alike_in_their_first_8_bytes(tails):
    """The sorted table sorts by the words' first 8 bytes, zeros past a word's end, then
    whole: words that share them (" abcdefg" and what follows), and words that end in zero
    bytes, come in the order of their bytes."""
    texts = [" abcdefg" + tail for tail in tails] + ["".join(tails)]
    tally = Tally(PreTokenizer("gpt2").family_id)
    for text in texts:
        tally.add(text)
    assert table_items(tally.table(True)) == sorted(regex_counts(texts, "gpt2").items())


@settings(max_examples=60)
@given(st.lists(st.text(st.sampled_from("ab \x00é"), max_size=40), max_size=40), st.booleans())
def test_a_tally_written_sorted_writes_its_sorted_table(tmp_path_factory, texts, long):
    """``write_sorted`` writes the sorted table's ends, counts and words, through its buffer
    or past it (a word longer than it); the tally then counts no more."""
    tally = Tally(PreTokenizer("gpt2").family_id)
    for text in texts + ([" " + "é" * (1 << 20)] if long else []):
        tally.add(text)
    words, ends, counts = tally.table(True)
    assert tally.words_bytes == len(words)
    path = tmp_path_factory.mktemp("sorted") / "table"
    with open(path, "wb") as f:
        f.write(b"head")
        f.flush()
        tally.write_sorted(f.fileno())
    assert path.read_bytes() == b"head" + ends + counts + words
    with pytest.raises(RuntimeError, match="written out"):
        tally.add("more")


@pytest.mark.parametrize("char", ["a", "你", "😀"])
def test_tally_with_many_distinct_and_long_pretokens(char):
    """Enough distinct pre-tokens to grow the index and buffers several times, and texts long
    enough to be counted with the GIL released."""
    text = " ".join(f"{char}{i % 30000}" for i in range(100000)) + " " + char * 70000 + "  x "
    tally = Tally(0)
    tally.add_all([text, text[:5000]])
    assert tally.counts() == regex_counts([text, text[:5000]], "gpt2")


def test_tally_of_family_minus_one_counts_each_text_whole():
    tally = Tally(-1)
    tally.add_all(["a b", "a b", "", "é"])
    assert tally.counts() == {b"a b": 2, b"\xc3\xa9": 1}


def test_tally_refuses_what_has_no_utf8_or_is_not_text():
    with pytest.raises(UnicodeEncodeError):
        Tally(0).add("a \ud800 b")
    with pytest.raises(TypeError):
        Tally(0).add(b"a b")
    with pytest.raises(TypeError):
        Tally(0).add_all(["a", 1])
    with pytest.raises(ValueError):
        Tally(len(FAMILIES))
