"""Pre-tokenization: the fast counting paths agree with a plain regex count."""

from __future__ import annotations

import re
from collections import Counter

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import PATTERNS, PreTokenizer
from engine.corpus._space_parts import count_space_parts
from engine.corpus.counting import count_file

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
]
texts = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


def plain_count(text: str, pattern: str, specials: list[str]) -> Counter[bytes]:
    """Regex over each piece between special tokens, no shortcuts."""
    ordered = sorted(specials, key=len, reverse=True)
    pieces = regex.split("|".join(map(regex.escape, ordered)), text) if ordered else [text]
    return Counter(tok.encode() for piece in pieces for tok in regex.findall(PATTERNS[pattern], piece))


@pytest.mark.parametrize("pattern", list(PATTERNS))
@settings(max_examples=150, deadline=None)
@given(text=texts)
def test_count_equals_plain_regex_count(pattern, text):
    assert PreTokenizer(pattern, SPECIALS).count(text) == plain_count(text, pattern, SPECIALS)


@pytest.mark.parametrize("pattern", list(PATTERNS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, block=st.integers(1, 64), workers=st.sampled_from([1, 2]), max_parts=st.sampled_from([1, 8, 1 << 20]))
def test_streamed_count_equals_whole_count(monkeypatch, tmp_path, pattern, text, block, workers, max_parts):
    """Blocks cut by safe_cut, counted apart (in parallel, or here with the distinct parts
    folded into counts every ``max_parts``), add up to the whole."""
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)  # workers even for a small file
    monkeypatch.setattr("engine.corpus.shards.MAX_PARTS", max_parts)
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    pretok = PreTokenizer(pattern, SPECIALS)
    assert count_file(path, pretok, workers=workers, block_size=block) == pretok.count(text)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
@settings(max_examples=40, deadline=None)
@given(
    text=st.lists(st.sampled_from([p for p in PIECES if not p.isspace() and " " not in p and "\n" not in p]), max_size=400).map("".join),
    block=st.integers(1, 64),
)
def test_long_text_without_a_cut_streams_like_the_whole(tmp_path_factory, pattern, text, block):
    """Text with no space or newline (one long pre-token, or runs of them between special
    tokens) is held across blocks and still counts as the whole does."""
    path = tmp_path_factory.mktemp("long") / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    pretok = PreTokenizer(pattern, SPECIALS)
    assert count_file(path, pretok, workers=1, block_size=block) == pretok.count(text)


@settings(max_examples=100, deadline=None)
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
@settings(max_examples=200, deadline=None)
@given(text=texts, more=texts)
def test_a_safe_cut_changes_no_pretoken(pattern, text, more):
    """Whatever follows, the text before ``safe_cut`` splits as it does inside the whole,
    and the rest as the remainder of the whole."""
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


NEWLINE_CUTS = {0: None, 1: re.compile(r"(?<=\S)(?=\n)"), 2: re.compile(r"(?<=[A-Za-z0-9])(?=\n)")}


def split_counts(piece: str, bare: dict[str, int], spaced: dict[str, int], newline_after: int) -> None:
    """What count_space_parts must do, written with re.split."""
    first, *later = re.split(r" (?<=\S )", piece)
    cut = NEWLINE_CUTS[newline_after]
    for part, into in [(first, bare), *((p, spaced) for p in later)]:
        head, *tail = cut.split(part) if cut else [part]
        into[head] = into.get(head, 0) + 1
        for t in tail:
            bare[t] = bare.get(t, 0) + 1


@pytest.mark.parametrize("newline_after", [0, 1, 2])
@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(kinds_text, min_size=1, max_size=4),
    bare=st.dictionaries(kinds_text, st.integers(1, 9), max_size=3),
    spaced=st.dictionaries(kinds_text, st.integers(1, 9), max_size=3),
)
def test_count_space_parts_equals_re_split(newline_after, pieces, bare, spaced):
    """The C counter cuts as re.split does, for every kind of str, and adds to what the
    dicts already hold."""
    want_bare, want_spaced = dict(bare), dict(spaced)
    for piece in pieces:
        split_counts(piece, want_bare, want_spaced, newline_after)
        count_space_parts(piece, bare, spaced, newline_after)
    assert bare == want_bare
    assert spaced == want_spaced


@pytest.mark.parametrize(
    ("piece", "newline_after", "bare", "spaced"),
    [
        ("", 0, [""], []),
        ("a", 0, ["a"], []),
        ("a ", 0, ["a"], [""]),
        ("a  b", 0, ["a"], [" b"]),
        ("  a b", 0, ["  a"], ["b"]),
        ("a\u3000 b c", 0, ["a\u3000 b"], ["c"]),  # a wide space is whitespace: no cut after it
        ("a\xa0 b", 0, ["a\xa0 b"], []),
        ("你 好 你", 0, ["你"], ["好", "你"]),
        ("😀 é 😀 ", 0, ["😀"], ["é", "😀", ""]),
        ("a\nb c\n\nd", 0, ["a\nb"], ["c\n\nd"]),
        ("a\nb c\n\nd", 1, ["a", "\nb", "\n\nd"], ["c"]),
        ("a.\nb 7\n \nd", 1, ["a.", "\nb", "\n \nd"], ["7"]),
        ("a.\nb 7\n \nd", 2, ["a.\nb", "\n \nd"], ["7"]),  # GPT-4: not after punctuation
        ("é\nx", 2, ["é\nx"], []),  # GPT-4 cuts after ASCII letters and digits only
        ("\nx \ny", 1, ["\nx"], ["\ny"]),
    ],
)
def test_count_space_parts_examples(piece, newline_after, bare, spaced):
    got_bare: dict[str, int] = {}
    got_spaced: dict[str, int] = {}
    count_space_parts(piece, got_bare, got_spaced, newline_after)
    assert got_bare == dict(Counter(bare))
    assert got_spaced == dict(Counter(spaced))


@pytest.mark.parametrize("char", ["a", "你", "😀"])
def test_count_space_parts_with_many_distinct_parts(char):
    """Enough distinct parts to make the C hash table grow several times."""
    piece = " ".join(f"{char}{i % 3000}" for i in range(10000)) + "  x "
    bare: dict[str, int] = {}
    spaced: dict[str, int] = {}
    count_space_parts(piece, bare, spaced, 1)
    want_bare: dict[str, int] = {}
    want_spaced: dict[str, int] = {}
    split_counts(piece, want_bare, want_spaced, 1)
    assert bare == want_bare
    assert list(spaced.items()) == list(want_spaced.items())  # also in first-seen order


def test_count_space_parts_checks_its_arguments():
    with pytest.raises(TypeError):
        count_space_parts(b"a b", {}, {}, 1)
    with pytest.raises(TypeError):
        count_space_parts("a b", Counter(), [], 1)
    with pytest.raises(TypeError):
        count_space_parts("a b", {}, {"b": "not a number"}, 1)
