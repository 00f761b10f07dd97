"""The compiled merge loop starts some characters already merged (engine/encode/_whole_chars.c):
it must give the ids of the Python loop, which starts from bytes, in every context.

The hard cases are merges that join part of a character to its neighbour at a low rank:
" \\xe9" (a space and the first byte of 道) in o200k_base, "\\x80\\xe0\\xb8" (the end of 一 and
the start of a Thai letter), and, in a tokenizer trained on whole lines of mixed scripts,
whatever pairs that training made first. Pieces here are merged whole, not pre-tokenized, so
every character meets every kind of neighbour.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Tokenizer, Trainer
from tests.conftest import fixture_file
from tests.exactness import rank_file, text_of

CHINESE = text_of("zh-xiyouji-9k.txt")
MIXED = "ข้อความภาษาไทย こんにちは世界 한국어 Русский текст ελληνικά عربى हिन्दी “”—…·《》"

characters = st.one_of(
    st.sampled_from(sorted(set(CHINESE))),
    st.sampled_from(sorted(set(MIXED))),
    st.characters(min_codepoint=0x80, max_codepoint=0xFFFF, exclude_categories=["Cs"]),
    st.sampled_from(list(" \n\t'.,0123abcXYZ")),
    st.sampled_from(["😀", "🙏", "\u200d", "e\u0301"]),
)
pieces = st.one_of(
    st.lists(characters, min_size=1, max_size=40).map("".join).map(str.encode),
    st.integers(0, len(CHINESE) - 1).flatmap(lambda i: st.integers(1, 80).map(lambda n: CHINESE[i : i + n].encode())),
)


def loops_agree(tok: Tokenizer, piece: bytes) -> None:
    assert tok._ranks.ids(piece) == "".join(map(chr, tok._bpe(piece)))


@cache
def published(name: str) -> Tokenizer:
    return Tokenizer.load(rank_file(name))


@cache
def trained_on_lines() -> Tokenizer:
    """Merges learned across characters and spaces: each line is one pre-token."""
    text = CHINESE + "\n" + (MIXED + "\n") * 20
    trainer = Trainer.from_text(text, 900, [], pattern=r"[^\n]+|\n")
    trainer.run()
    return Tokenizer.from_trainer(trainer)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@settings(max_examples=300)
@given(pieces)
def test_published_encodings(name, piece):
    loops_agree(published(name), piece)


@settings(max_examples=300)
@given(pieces)
def test_gpt2(piece):
    loops_agree(gpt2(), piece)


@settings(max_examples=300)
@given(pieces)
def test_trained_across_characters(piece):
    loops_agree(trained_on_lines(), piece)


@settings(max_examples=100)
@given(pieces, st.integers(0, 3), st.integers(0, 3))
def test_cut_characters(piece, head, tail):
    """Pieces that start or end inside a character (what ``MergeRanks.ids`` may be given)."""
    loops_agree(published("o200k_base"), piece[head : len(piece) - tail])


def test_the_contexts_that_forbid_it():
    """道 after a space, 一 before a Thai letter: the merges that join them across come first."""
    tok = published("o200k_base")
    for text in ["道", " 道", "x道", "道理", "一ก", "一", "ก一", "一一一", " “道”"]:
        loops_agree(tok, text.encode())


@cache
def gpt2() -> Tokenizer:
    return Tokenizer.from_files(fixture_file("gpt2_vocab.json"), fixture_file("gpt2_merges.txt"))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_every_merge_of_two_characters(name):
    """Each merge that joins two characters of one token each, between them and inside a
    longer run: the compiled loop skips a pair whose left character's followers (a filter of
    the ids that follow it in a merge) lack the right one, so it must find every such merge."""
    tok = published(name)
    one_token = {
        b
        for b in tok.vocab.values()
        if len(b) > 1 and len(b.decode("utf-8", "replace")) == 1 and "\ufffd" not in b.decode("utf-8", "replace")
    }
    pairs = [a + b for a, b in tok.merges if a in one_token and b in one_token]
    assert len(pairs) > 400
    for piece in pairs:
        loops_agree(tok, piece)
    loops_agree(tok, b"".join(pairs))
