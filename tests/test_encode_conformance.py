"""GPT-2's files encode exactly like tiktoken's ``gpt2`` encoding (built offline from them)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Tokenizer
from tests.conftest import fixture_file
from tests.exactness import ASSIGNED

EOT = "<|endoftext|>"


def gpt2() -> Tokenizer:
    return Tokenizer.from_files(fixture_file("gpt2_vocab.json"), fixture_file("gpt2_merges.txt"))


def tiktoken_encoding(tok: Tokenizer):  # noqa: ANN201 - tiktoken is optional
    """A ``tiktoken.Encoding`` with ``tok``'s ranks, pattern and special tokens (no download)."""
    tiktoken = pytest.importorskip("tiktoken")
    specials = set(tok.special_ids.values())
    ranks = {token: i for i, token in tok.vocab.items() if i not in specials}
    return tiktoken.Encoding(name="gpt2", pat_str=tok.pretokenizer.pattern, mergeable_ranks=ranks, special_tokens=tok.special_ids)


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return gpt2()


@pytest.fixture(scope="module")
def reference(tok):  # noqa: ANN001, ANN201
    return tiktoken_encoding(tok)


def test_gpt2_files_load_with_endoftext_special(tok):
    assert len(tok.vocab) == 50257 and len(tok.merges) == 50000
    assert tok.special_ids == {EOT: 50256}
    assert tok.pattern == "gpt2"


def test_every_gpt2_entry_encodes_to_itself(tok):
    assert Tokenizer(tok.vocab, tok.merges, tok.special_tokens).verify_direct()


@pytest.mark.parametrize("name", ["address.txt", "german.txt", "tinystories_sample.txt", "corpus.en"])
def test_fixture_texts(tok, reference, name):
    text = fixture_file(name).read_text(encoding="utf-8")
    ids = tok.encode(text)
    assert ids == reference.encode(text, allowed_special="all")
    assert tok.decode(ids) == text


@pytest.mark.parametrize("name", ["en-mix-192k.txt", "zh-xiyouji-128k.txt"])
def test_corpora(tok, reference, name):
    text = fixture_file(name).read_text(encoding="utf-8")
    ids = tok.encode(text)
    assert ids == reference.encode(text, allowed_special="all")
    assert tok.decode(ids) == text


def test_streamed_corpus_equals_encode(tok):
    text = fixture_file("zh-xiyouji-128k.txt").read_text(encoding="utf-8")
    pieces = [text[i : i + 4093] for i in range(0, len(text), 4093)]
    assert list(tok.encode_iterable(pieces)) == tok.encode(text)


unicode_text = st.lists(
    st.one_of(
        st.text(ASSIGNED, max_size=10),
        st.text(st.sampled_from(" \t\n\r\u00a0\u3000"), min_size=1, max_size=5),
        st.sampled_from(["🙂", "👩‍👩‍👧", "🇩🇪", "e\u0301\u0302", "ก\u0e34", "'s", "'LL", "’re", "٣٤٥", "1234567"]),
        st.sampled_from([EOT, EOT + EOT, "<|endoftext", "endoftext|>"]),
    ),
    max_size=25,
).map("".join)


@settings(max_examples=200)
@given(unicode_text)
def test_generated_unicode_matches_tiktoken(tok, reference, text):
    ids = tok.encode(text)
    assert ids == reference.encode(text, allowed_special="all")
    assert tok.decode(ids) == text
