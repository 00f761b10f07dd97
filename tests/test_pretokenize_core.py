"""The compiled pre-tokenizers split exactly as the ``regex`` module does, under every pattern
string that ``KNOWN_PATTERNS`` gives to a family: GPT-2 (r50k), GPT-4 (cl100k, before and
after tiktoken's possessive rewrite, and Llama-3), o200k and Qwen2."""

from __future__ import annotations

import sys

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import PrefixSpace, Split, Tokenizer
from engine.corpus import gen_unicode_tables
from engine.corpus._pretokenize import pretoken_count, pretokens
from engine.corpus.pretokenize import FAMILIES, KNOWN_PATTERNS, PATTERNS, PreTokenizer

EVERY_CODE_POINT = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
STRINGS = sorted(KNOWN_PATTERNS.items(), key=lambda kv: FAMILIES.index(kv[1]))
"""(pattern string, family): the strings a family serves."""


def _name(string: str) -> str:
    named = [name for name, text in PATTERNS.items() if text == string]
    return named[0] if named else f"{KNOWN_PATTERNS[string]}-{sorted(KNOWN_PATTERNS).index(string)}"


@pytest.fixture(scope="module", params=STRINGS, ids=[_name(s) for s, _ in STRINGS])
def pattern(request):  # noqa: ANN001, ANN201
    string, family = request.param
    return FAMILIES.index(family), regex.compile(string)


def test_committed_tables_are_what_the_generator_writes_today():
    assert gen_unicode_tables.HEADER.read_text(encoding="utf-8") == gen_unicode_tables.header()


def test_every_named_pattern_is_compiled():
    """Each name of ``PATTERNS`` has a family, and a tokenizer given the name or the string
    encodes in C."""
    vocab = {i: bytes([i]) for i in range(256)}
    for name, string in PATTERNS.items():
        assert KNOWN_PATTERNS[string] in FAMILIES
        for given_as in (name, string):
            tok = Tokenizer(vocab, [], pattern=given_as)
            assert tok.pretokenizer.family == KNOWN_PATTERNS[string]
            assert tok._new_encoder() is not None


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("glue", ["", " ", "'", " \r\n", "a", "A\u0301"])
def test_every_code_point_in_every_neighbourhood(family, glue):
    """All 1,112,064 code points, each between two ``glue``s: every class and every pairing
    of a class with the glue's, exactly as the regex splits them (under the family's first
    string: the random texts below try the others)."""
    string = next(s for s, f in STRINGS if f == family)
    text = glue.join(EVERY_CODE_POINT)
    assert pretokens(text, FAMILIES.index(family)) == regex.findall(string, text)


# Pieces that meet every branch of the patterns: letters, numbers and marks of many scripts;
# upper, lower, title-case and modifier letters (o200k's classes); whitespace of every kind
# (regex's \s omits U+001C-U+001F, which str.isspace counts) and runs of \r and \n;
# contractions in any case and with U+017F (long s, which (?i) matches as s); o200k's
# newlines and slashes after punctuation; astral text.
SPECIAL_PIECES = [
    *("'s", "'S", "'ſ", "'t", "'T", "'d", "'D", "'m", "'M", "'ll", "'LL", "'lL", "'Ll", "'ve", "'VE", "'Ve", "'vE"),
    *("'re", "'RE", "'rE", "'Re", "'", "''", "’s", "'x", "'l", "'v", "'r", "'K", "s's", "S'S", "it's", "IT'S", "Don'T"),
    *(" ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", "\r\r", "\n\r", "\r\n\r\n", " \n", "\n ", " \r\n ", "\t\n\t"),
    *("\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u00a0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u2029"),
    *("\u202f", "\u205f", "\u3000", "\ufeff"),
    *("e\u0301", "\u0301", "\u0308\u0301", "\u0903", "\u093f", "\u20dd", "\u302a", "ก\u0e34", "क्", "A\u0301B", " \u0301a"),
    *("日本語", "한국어", "ابن", "אב", "Ωμέγα", "ΣΑΣ", "ς", "ǅ", "ǅa", "Aǅ", "ᾈ", "ʰ", "ʰa", "Aʰ", "ー", "々", "ß", "ﬁ", "İ", "K"),
    *("Hello", "HELLO", "hELLO", "HeLLo", "McDonald", "iPhone", "ÉCOLE", "école", "Ünïcödé", "ABCdef", "abcDEF"),
    *("0", "123", "1234567", "٣٤٥", "۴", "߅", "१२", "৬", "๗", "໘", "༩", "၁", "០", "᠑", "１２", "𝟘𝟙", "𑁧"),
    *("½", "²", "₃", "Ⅻ", "ⅷ", "①", "〇"),
    *("!", "?!", "...", "—", "€", "/", "//", "!/", "!/\n", ".\n/", "a/b", " /\r\n", "\n/"),
    *("😀", "👩‍👩‍👧", "🇩🇪", "𝒜", "𠀀", "\U000e0100", "\U0010fffd"),
]
piece = st.one_of(
    st.sampled_from(SPECIAL_PIECES),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=6),  # every general category
    st.text(st.characters(categories=["L", "M", "N", "Z", "Cc"]), max_size=4),
    st.text(st.characters(categories=["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No"]), max_size=6),
    st.text(st.sampled_from("aZ1 '\n\r\t./ſSLé\u0301ǅʰ"), max_size=8),
)
long_run = st.tuples(piece, st.integers(2, 60)).map(lambda pair: pair[0] * pair[1])
unicode_text = st.lists(st.one_of(piece, piece, long_run), max_size=25).map("".join)


@settings(max_examples=500)
@given(unicode_text)
def test_compiled_split_is_the_regex_split(pattern, text):
    family, reference = pattern
    expected = reference.findall(text)
    assert pretokens(text, family) == expected
    assert pretoken_count(text, family) == len(expected)


@settings(max_examples=100)
@given(st.lists(st.one_of(piece, st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2)), max_size=10).map("".join))
def test_lone_surrogates_are_characters_of_no_class(pattern, text):
    """A str may hold lone surrogates (which have no UTF-8): the scanner splits them as the
    regex does, as characters that are no letter, number or space."""
    family, reference = pattern
    assert pretokens(text, family) == reference.findall(text)


def test_a_pretokenizer_knows_its_family_by_the_pattern_string():
    for string, family in KNOWN_PATTERNS.items():
        pretok = PreTokenizer(string)
        assert (pretok.family, pretok.chunked) == (family, True)
    custom = PreTokenizer(PATTERNS["gpt4"] + "|x")
    assert (custom.family, custom.chunked) == (None, False)


def test_a_tokenizer_json_split_of_a_family_pattern_is_compiled():
    """Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)], as the open models'
    files write their pre-tokenizer, is the one pattern: it encodes in C. A Split that
    does something else keeps its stages."""
    vocab = {i: bytes([i]) for i in range(256)}
    for string, family in KNOWN_PATTERNS.items():
        tok = Tokenizer(vocab, [], pattern=[Split(string)])
        assert tok.pretokenizer.family == family
        assert tok._new_encoder() is not None
    for stages in ([Split(PATTERNS["llama3"], "merged_with_next")], [Split(PATTERNS["llama3"]), PrefixSpace()]):
        tok = Tokenizer(vocab, [], pattern=stages)
        assert tok.pretokenizer.family is None
        assert tok._new_encoder() is None


def test_pretokens_refuses_an_unknown_family():
    for split in (pretokens, pretoken_count):
        with pytest.raises(ValueError, match="family"):
            split("a", len(FAMILIES))
        with pytest.raises(ValueError, match="family"):
            split("a", -1)
