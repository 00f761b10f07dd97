"""The pre-tokenizer 64 bytes at a time (engine/corpus/_pretokenize_simd.h) splits as the
``regex`` module does on every instruction set this machine runs, each forced in turn: random
texts mostly of ASCII (the blocks' own ground, their edges at every offset), random Unicode,
the corpora's excerpts, and the counting tally run under each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Tokenizer
from engine.corpus import _pretokenize
from engine.corpus._pretokenize import pretoken_count, pretokens
from engine.corpus.pretokenize import FAMILIES, KNOWN_PATTERNS
from tests.conftest import ROOT
from tests.test_pretokenize_core import unicode_text

LEVELS = ["scalar", "sse2", "avx2", "neon"]
STRINGS = {family: next(s for s, f in KNOWN_PATTERNS.items() if f == family) for family in FAMILIES}
"""The first pattern string of each family (tests/test_pretokenize_core.py tries the others)."""

# What the blocks' rules turn on: every class next to every other, spaces and newlines before
# each, contractions in any case (and chained, and cut), o200k's capitals after small letters
# and slashes after punctuation, digits by threes; Latin-1 letters (two bytes the blocks take
# as letters) and signs beside them; a wider character now and then.
ASCII_PIECES = [
    *("a", "Z", "word", "Word", "WORD", "wORD", "McDonald", "iPhone", "ABCdef", "abcDEF", "x", "Q"),
    *("'s", "'S", "'t", "'d", "'m", "'ll", "'LL", "'lL", "'ve", "'VE", "'re", "'Re", "'l", "'v", "'r", "'x", "'"),
    *("''", "it's", "IT'S", "don't", "'s's", "we'll've", "1's", "!'s", " 's", "\n's", "\t's"),
    *(" ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\n ", " \n ", "\t\n\t", "\x0b", "\x0c", "\x1c"),
    *("0", "12", "123", "1234", "1234567", " 7", "3a", "a3"),
    *("!", "?!", "...", ".", ",", "/", "//", "!/", "!/\n", ".\n/", "a/b", " /\r\n", "\n/", "!\n", "!\n\n", "(", "\x00", "\x7f"),
]
WIDE_PIECES = ["é", "É", "ß", "ÿ", "×", "÷", "Ø", "Àb", "café", "CAFÉ's", "日本", "ſ", "K", "\u0301", "\u00a0", "\u2028", "１２", "😀"]
ascii_piece = st.one_of(st.sampled_from(ASCII_PIECES), st.text(st.sampled_from("aZ1 '\n\r\t./!sSlLvVeEéÉ×"), max_size=8))
ascii_run = st.tuples(ascii_piece, st.integers(2, 70)).map(lambda pair: pair[0] * pair[1])
ascii_text = st.lists(st.one_of(ascii_piece, ascii_piece, ascii_piece, ascii_run, st.sampled_from(WIDE_PIECES)), max_size=60).map("".join)


@pytest.fixture(scope="module", params=LEVELS)
def level(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each instruction set this machine runs, forced for the tests, then the default again."""
    if request.param not in _pretokenize.simd_levels():
        pytest.skip(f"{request.param} does not run on this machine")
    default = _pretokenize.simd_level()
    _pretokenize.set_simd_level(request.param)
    yield request.param
    _pretokenize.set_simd_level(default)


def _check(text: str, family: str) -> None:
    expected = regex.findall(STRINGS[family], text)
    assert pretokens(text, FAMILIES.index(family)) == expected
    assert pretoken_count(text, FAMILIES.index(family)) == len(expected)
    assert pretoken_count(text.encode("utf-8"), FAMILIES.index(family)) == len(expected)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=300)
@given(text=ascii_text)
def test_mostly_ascii_texts_split_as_regex(level, family, text):
    _check(text, family)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=100)
@given(text=unicode_text)
def test_unicode_texts_split_as_regex(level, family, text):
    _check(text, family)


# Runs of CJK ideographs (U+4E00-U+9FFF) and what borders them: the characters just outside
# that range (U+4DFF a hexagram sign, U+A000 a Yi syllable), others of three bytes with E4 or
# E9 first, kana, CJK punctuation, a letter of two bytes or four, ASCII letters, digits,
# spaces and signs.
IDEOGRAPHS = "一丁七万丈三上下不与西游记第回孫悟空龍鳳鿿鿕"
BORDERS = [
    "\u4dff",
    "\u4dc0",
    "\u3400",
    "\ua000",
    "\u9fff",
    "\u4e00",
    "あ",
    "ア",
    "，",
    "。",
    "「",
    "」",
    "é",
    "𠀀",
    "a",
    "Z",
    "7",
    " ",
    "\n",
    "!",
    "'s",
]
ideograph_run = st.text(st.sampled_from(IDEOGRAPHS), min_size=1, max_size=40)
ideograph_text = st.lists(st.one_of(ideograph_run, ideograph_run, st.sampled_from(BORDERS)), max_size=30).map("".join)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=200)
@given(text=ideograph_text)
def test_ideograph_runs_split_as_regex(level, family, text):
    _check(text, family)


wide3_run = st.text(st.characters(min_codepoint=0x800, max_codepoint=0xFFFF, exclude_categories=("Cs",)), max_size=40)
WIDE3_BORDERS = ["a", " ", "\n", "é", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "𠀀", "😀"]


@settings(max_examples=300)
@given(text=st.lists(st.one_of(wide3_run, st.sampled_from(WIDE3_BORDERS)), max_size=12).map("".join))
def test_three_byte_characters_made_utf8(level, text):
    """A str's characters of three UTF-8 bytes (U+0800-U+FFFF), eight at a time where the
    level has a way: runs of every length beside characters of one, two and four bytes, in
    strs of 2-byte and 4-byte units, read as their UTF-8 is."""
    assert "".join(pretokens(text, 0)) == text
    assert pretoken_count(text, 0) == pretoken_count(text.encode("utf-8"), 0)


@pytest.mark.parametrize("offset", range(0, 70, 3))
def test_every_piece_at_every_offset_of_a_block(level, offset):
    """Each piece after offset letters, so that it meets a block's edge at each byte."""
    for family in FAMILIES:
        for piece in ASCII_PIECES:
            _check("a" * offset + " " + piece + piece + " x" + piece, family)


FIXTURES = ["corpus.en", "german.txt", "address.txt", "lecture-002-deepseek.txt", "en-mix-192k.txt", "zh-xiyouji-128k.txt"]
"""Texts of tests/fixtures: prose, a letter's address lines, a lecture, and excerpts of the
benchmark corpora."""


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return [(ROOT / "tests/fixtures" / name).read_text(encoding="utf-8") for name in FIXTURES]


@pytest.mark.parametrize("family", FAMILIES)
def test_corpora_split_as_regex(level, family, texts):
    for text in texts:
        assert pretokens(text, FAMILIES.index(family)) == regex.findall(STRINGS[family], text)


COUNT_IN_A_CHILD = """
import json, sys
from engine.corpus._tally import Tally
tally = Tally(int(sys.argv[1]))
tally.add_all(json.loads(sys.stdin.read()))
print(json.dumps({k.decode("utf-8", "surrogatepass"): v for k, v in tally.counts().items()}))
"""


@pytest.mark.parametrize("family", FAMILIES)
def test_the_tally_counts_as_regex_on_each_level(level, family):
    """The tally's own scanner (another module's copy), forced by BPE_TUI_PRETOKENIZE_SIMD."""
    texts = [(ROOT / "tests/fixtures" / name).read_text(encoding="utf-8") for name in FIXTURES[:3]]
    texts.append("".join(ASCII_PIECES) * 3)
    env = {**os.environ, "BPE_TUI_PRETOKENIZE_SIMD": level}
    child = [sys.executable, "-c", COUNT_IN_A_CHILD, str(FAMILIES.index(family))]
    out = subprocess.run(child, input=json.dumps(texts), capture_output=True, text=True, env=env, check=True).stdout
    want = Counter(piece for text in texts for piece in regex.findall(STRINGS[family], text))
    assert json.loads(out) == dict(want)


ENCODE_IN_A_CHILD = """
import json, sys
from engine import Tokenizer
fixtures, text = sys.argv[1], open(sys.argv[2], encoding="utf-8").read()
gpt2 = Tokenizer.from_files(f"{fixtures}/gpt2_vocab.json", f"{fixtures}/gpt2_merges.txt")
print(json.dumps([gpt2.encode(text), Tokenizer.load(f"{fixtures}/o200k_base.tiktoken.gz").encode(text)]))
"""


def test_the_encoder_gives_the_same_ids_on_each_level(level, tmp_path):
    """The encoder's own scanner and UTF-8 (one more module's copy) under GPT-2's files and
    o200k's ranks, on English and Chinese text: the same ids as this process's encoder, on
    the widest level."""
    fixtures, text = ROOT / "tests/fixtures", tmp_path / "text.txt"
    english, chinese = (fixtures / name for name in ("en-mix-192k.txt", "zh-xiyouji-9k.txt"))
    text.write_text(english.read_text(encoding="utf-8") + chinese.read_text(encoding="utf-8") + "😀", encoding="utf-8")
    env = {**os.environ, "BPE_TUI_PRETOKENIZE_SIMD": level}
    child = [sys.executable, "-c", ENCODE_IN_A_CHILD, str(fixtures), str(text)]
    out = subprocess.run(child, capture_output=True, text=True, env=env, check=True).stdout
    here = [
        Tokenizer.from_files(fixtures / "gpt2_vocab.json", fixtures / "gpt2_merges.txt"),
        Tokenizer.load(fixtures / "o200k_base.tiktoken.gz"),
    ]
    assert json.loads(out) == [tok.encode(text.read_text(encoding="utf-8")) for tok in here]


def test_an_unknown_or_unavailable_level_is_refused():
    with pytest.raises(ValueError, match="no instruction set"):
        _pretokenize.set_simd_level("mmx")
    for name in set(LEVELS) - set(_pretokenize.simd_levels()):
        with pytest.raises(ValueError, match="not available"):
            _pretokenize.set_simd_level(name)
    assert _pretokenize.simd_levels()[0] == "scalar"


def test_a_module_starts_on_the_widest_level_unless_told():
    ask = "from engine.corpus import _pretokenize as p; print(p.simd_level(), p.simd_levels()[-1])"
    env = {k: v for k, v in os.environ.items() if k != "BPE_TUI_PRETOKENIZE_SIMD"}

    def levels(env: dict[str, str]) -> list[str]:
        return subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, env=env, check=True).stdout.split()

    chosen, widest = levels(env)
    assert chosen == widest
    assert levels({**env, "BPE_TUI_PRETOKENIZE_SIMD": "scalar"})[0] == "scalar"
