"""Pre-tokenization: the fast counting paths agree with a plain regex count."""

from __future__ import annotations

from collections import Counter

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import PATTERNS, PreTokenizer
from engine.corpus import count_file

SPECIALS = ["<|endoftext|>", "<|endoftext|><|endoftext|>", "<|pad|>"]
PIECES = [
    "a", "ab", " ", "  ", "   ", "\n", "\n\n", " \n", "\r\n", "\t", "word", " word", "Word", "don't",
    "'s", "'LL", "12", "12345", " 7", ".", "...", "!\n", "。", "你好", "😀", "é", "e\u0301",
    "<|endoftext|>", "<|pad|>", "<|endo", "ftext|>", "x\n ", " \n\n ",
]
texts = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


def plain_count(text: str, pattern: str, specials: list[str]) -> Counter[bytes]:
    """Regex over each piece between special tokens, no shortcuts."""
    ordered = sorted(specials, key=len, reverse=True)
    pieces = regex.split("|".join(map(regex.escape, ordered)), text) if ordered else [text]
    return Counter(tok.encode() for piece in pieces for tok in regex.findall(PATTERNS[pattern], piece))


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
@settings(max_examples=150, deadline=None)
@given(text=texts)
def test_count_equals_plain_regex_count(pattern, text):
    assert PreTokenizer(pattern, SPECIALS).count(text) == plain_count(text, pattern, SPECIALS)


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, block=st.integers(1, 64), workers=st.sampled_from([1, 2]))
def test_streamed_count_equals_whole_count(tmp_path, pattern, text, block, workers):
    """Blocks cut by safe_cut, counted apart (and in parallel), add up to the whole."""
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    pretok = PreTokenizer(pattern, SPECIALS)
    assert count_file(path, pretok, workers=workers, block_size=block) == pretok.count(text)


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


@pytest.mark.parametrize("name", ["gpt2", "gpt4"])
def test_named_patterns_are_known_by_their_text(name):
    """Worker processes and loaded files pass the regex itself: the fast paths still apply."""
    assert PreTokenizer(PATTERNS[name]).pattern_name == name
    assert PreTokenizer(PATTERNS[name]).chunked



@pytest.mark.parametrize("workers", [1, 2])
def test_read_progress_only_goes_forward(tmp_path, workers):
    """Blocks finish out of order in parallel; the bytes-read progress still only grows."""
    path = tmp_path / "corpus.txt"
    path.write_text("some words here, and 12 more\n" * 4000, encoding="utf-8")
    seen: list[int] = []
    count_file(path, PreTokenizer("gpt2"), workers=workers, block_size=1024, progress=lambda _, done, total: seen.append(done))
    assert seen == sorted(seen) and seen[-1] == path.stat().st_size
