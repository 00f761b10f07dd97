"""The compiled GPT-2 and GPT-4 pre-tokenizers split exactly as the ``regex`` module does."""

from __future__ import annotations

import sys

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.corpus import gen_unicode_tables
from engine.corpus.pretokenize import PATTERNS
from engine.encode._encoder_core import pretoken_count, pretokens

COMPILED = {"gpt2": 0, "gpt4": 1}
EVERY_CODE_POINT = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)


@pytest.fixture(scope="module", params=["gpt2", "gpt4"])
def pattern(request):  # noqa: ANN001, ANN201
    return request.param, regex.compile(PATTERNS[request.param])


def test_committed_tables_are_what_the_generator_writes_today():
    assert gen_unicode_tables.HEADER.read_text(encoding="utf-8") == gen_unicode_tables.header()


@pytest.mark.parametrize("glue", ["", " ", "'", " \r\n", "a"])
def test_every_code_point_in_every_neighbourhood(pattern, glue):
    """All 1,112,064 code points, each between two ``glue``s: every class and every
    pairing of a class with the glue's, exactly as the regex splits them."""
    name, reference = pattern
    text = glue.join(EVERY_CODE_POINT)
    assert pretokens(text, COMPILED[name]) == reference.findall(text)


# Pieces that meet every branch of the patterns: letters, numbers and marks of many scripts,
# whitespace of every kind (regex's \s omits U+001C-U+001F, which str.isspace counts),
# contractions in any case and with U+017F (long s, which (?i) matches as s), astral text.
SPECIAL_PIECES = [
    "'s",
    "'S",
    "'ſ",
    "'t",
    "'T",
    "'d",
    "'D",
    "'m",
    "'M",
    "'ll",
    "'LL",
    "'lL",
    "'ve",
    "'VE",
    "'Ve",
    "'re",
    "'RE",
    "'rE",
    "'",
    "''",
    "’s",
    "'x",
    "'l",
    "'v",
    "'r",
    "'K",
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    " \n",
    "\n ",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1f",
    "\x85",
    "\u00a0",
    "\u1680",
    "\u2000",
    "\u200a",
    "\u200b",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
    "\ufeff",
    "e\u0301",
    "\u0301",
    "\u0903",
    "\u20dd",
    "ก\u0e34",
    "क्",
    "日本語",
    "한국어",
    "ابن",
    "אב",
    "Ωμέγα",
    "ǅ",
    "ß",
    "ﬁ",
    "İ",
    "K",
    "123",
    "1234567",
    "٣٤٥",
    "१२",
    "½",
    "Ⅻ",
    "①",
    "𝟘𝟙",
    "〇",
    "!",
    "?!",
    "...",
    "—",
    "€",
    "😀",
    "👩‍👩‍👧",
    "🇩🇪",
    "𝒜",
    "𠀀",
    "\U000e0100",
    "\U0010fffd",
]
piece = st.one_of(
    st.sampled_from(SPECIAL_PIECES),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=6),
    st.text(st.characters(categories=["L", "M", "N", "Z", "Cc"]), max_size=4),
    st.text(st.sampled_from("aZ1 '\n\r\t.ſ"), max_size=6),
)
unicode_text = st.lists(piece, max_size=25).map("".join)


@settings(max_examples=600, deadline=None)
@given(unicode_text)
def test_compiled_split_is_the_regex_split(pattern, text):
    name, reference = pattern
    expected = reference.findall(text)
    assert pretokens(text, COMPILED[name]) == expected
    assert pretoken_count(text, COMPILED[name]) == len(expected)


def test_pretokens_refuses_an_unknown_pattern():
    for split in (pretokens, pretoken_count):
        with pytest.raises(ValueError, match="pattern must be"):
            split("a", 2)
