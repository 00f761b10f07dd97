"""The tokenizer on vocabularies trained here: encode, decode, streaming, the step story."""

from __future__ import annotations

import random
import re
import sys
import tracemalloc
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import BpeError, TokenIdError, Tokenizer, Trainer
from engine.encode.unigram import UnigramTokenizer
from engine.encode.wordpiece import WordPieceTokenizer
from tests.conftest import fixture_file

SAMPLE = (Path(__file__).resolve().parent.parent / "sample_corpora" / "sample.txt").read_text(encoding="utf-8")
SPECIALS = ["<|endoftext|>", "<|endoftext|><|endoftext|>", "<|pad|>"]

# Text that exercises every pre-token class: letters, digits, punctuation, contractions,
# whitespace runs, non-Latin scripts, emoji (with ZWJ), combining marks and specials.
texts = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
        st.sampled_from([" ", "  ", "\n", "\n\n ", "\t", "'s", "'ll", "e\u0301", "👩‍👩‍👧", "日本語", "123456", "?!"]),
        st.sampled_from(SPECIALS),
        st.sampled_from(SAMPLE.split(" ")[:200]),
    ),
    max_size=30,
).map("".join)


def train(pattern: str = "gpt2", vocab_size: int = 600) -> Tokenizer:
    trainer = Trainer.from_text(SAMPLE + "<|endoftext|>" + SAMPLE.upper(), vocab_size, SPECIALS, pattern=pattern)
    trainer.run()
    return Tokenizer.from_trainer(trainer)


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return train()


@pytest.fixture(scope="module")
def merging(tok: Tokenizer) -> Tokenizer:
    """The same vocabulary with every pre-token merged (no ``direct`` shortcut)."""
    return Tokenizer(tok.vocab, tok.merges, tok.special_tokens)


@settings(max_examples=150)
@given(texts)
def test_round_trip_and_direct_shortcut_is_exact(tok, merging, text):
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert merging.encode(text) == ids


@pytest.fixture(scope="module")
def gpt4() -> Tokenizer:
    return train("gpt4", 400)


@settings(max_examples=60)
@given(texts)
def test_gpt4_pattern_round_trip(gpt4, text):
    ids = gpt4.encode(text)
    assert gpt4.decode(ids) == text
    assert ids == [i for trace in gpt4.encode_steps(text) for i in trace.ids]


def test_trained_vocabulary_encodes_to_itself(tok, merging):
    assert tok.direct and not merging.direct
    assert merging._merges_rebuild_vocab()
    assert Tokenizer(tok.vocab, tok.merges, tok.special_tokens).verify_direct()


def test_loading_saved_files_proves_direct(tok, tmp_path):
    tok.save_gpt2_files(tmp_path)
    loaded = Tokenizer.load(tmp_path)
    assert loaded.direct
    assert loaded.encode(SAMPLE) == tok.encode(SAMPLE)


def tiny(merges: list[tuple[bytes, bytes]]) -> Tokenizer:
    """Bytes plus the entries ``merges`` make, in the order they first appear."""
    vocab = {i: bytes([i]) for i in range(256)}
    for left, right in merges:
        if left + right not in vocab.values():
            vocab[len(vocab)] = left + right
    return Tokenizer(vocab, merges)


def test_direct_refused_where_an_entry_does_not_encode_to_itself(tmp_path):
    # "abc" is an entry, but "bc" merges first and ("a", "bc") is no merge.
    tok = tiny([(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])
    assert not tok._merges_rebuild_vocab()
    assert not tok.verify_direct()
    bc = tok.encoder[b"bc"]
    assert tok.encode("abc abc") == [ord("a"), bc, ord(" "), ord("a"), bc]
    tok.save_gpt2_files(tmp_path)
    assert not Tokenizer.load(tmp_path).direct


def test_direct_checked_entry_by_entry_where_the_merges_prove_nothing():
    # ("ab", "c") is listed before ("a", "b"), which makes its operand: no proof, yet
    # "abc" still becomes "ab" then "abc".
    tok = tiny([(b"ab", b"c"), (b"a", b"b")])
    assert not tok._merges_rebuild_vocab()
    assert tok.verify_direct()


@settings(max_examples=300)
@given(st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=40), st.randoms(), st.booleans())
def test_merges_prove_direct_only_when_every_entry_encodes_to_itself(picks, rng, shuffled):
    """Random merge lists over three letters, some with several merges to one entry, some
    out of order: whenever the merges prove ``direct``, every entry does encode to itself."""
    tokens = [b"a", b"b", b"c"]
    merges = []
    for i, j in picks:
        left, right = tokens[i % len(tokens)], tokens[j % len(tokens)]
        merges.append((left, right))
        if left + right not in tokens:
            tokens.append(left + right)
    if shuffled:
        rng.shuffle(merges)
    tok = tiny(merges)
    if tok._merges_rebuild_vocab():
        assert all(tok._bpe(token) == [tok.encoder[token]] for token in tokens)


def test_ids_must_be_code_points():
    vocab = {i: bytes([i]) for i in range(255)} | {sys.maxunicode: b"\xff"}
    with pytest.raises(ValueError, match="token ids must lie in"):
        Tokenizer(vocab, [])


@pytest.mark.parametrize("cache_size", [1 << 17, 3])
@pytest.mark.parametrize("trained", ["tok", "gpt4"])
def test_spaces_and_newlines_with_any_cache_size(request, trained, cache_size):
    """Runs of spaces and newlines before, after and between words, with a cache that is
    emptied every three pre-tokens or not at all: the ids of the Python merge loop."""
    tok = request.getfixturevalue(trained)
    words = ["a", "  b", "\n c", "d\n", "  ", "e ", " \n\n  f", "\t", "g  \n", "1234", "!?\n", "'s"]
    rng = random.Random(7)
    for _ in range(200):
        text = " ".join(rng.choices(words, k=rng.randrange(1, 8)))
        fresh = Tokenizer(tok.vocab, tok.merges, tok.special_tokens, tok.pattern, cache_size)
        fresh.direct = True
        expected = [i for trace in fresh.encode_steps(text) for i in trace.ids]
        assert fresh.encode(text) == expected
        assert fresh.encode(text + "<|pad|>" + text) == fresh.encode(text) + [fresh.special_ids["<|pad|>"]] + expected


def test_special_tokens_longest_first(tok):
    eot = tok.special_ids["<|endoftext|>"]
    double = tok.special_ids["<|endoftext|><|endoftext|>"]
    assert tok.encode("a<|endoftext|><|endoftext|><|endoftext|>b")[1:3] == [double, eot]
    assert tok.encode("<|pad|>") == [tok.special_ids["<|pad|>"]]
    assert tok.special_ids["<|pad|>"] not in tok.encode("<|pad| <|pad")


BAD_IDS = [
    ([1, 999999], "token id 999999 at index 1 is not in the vocabulary (0-{top})"),
    ([1, 2, -1], "token id -1 at index 2 is not in the vocabulary (0-{top})"),
    ([2**70], f"token id {2**70} at index 0 is not in the vocabulary (0-{{top}})"),
    ([0, 2**30], f"token id {2**30} at index 1 is not in the vocabulary (0-{{top}})"),  # the first int of two digits
    (["a"], "token id 'a' at index 0 is not an integer"),
    ("ab", "token id 'a' at index 0 is not an integer"),
    ([1, 1.5], "token id 1.5 at index 1 is not an integer"),
    ([65.0], "token id 65.0 at index 0 is not an integer"),
    ((1, None), "token id None at index 1 is not an integer"),
    (None, "token ids must be a sequence of integers, not None"),
    (7, "token ids must be a sequence of integers, not 7"),
    ([1, True], "token id True at index 1 is a bool, not a token id"),
    ((False, 1), "token id False at index 0 is a bool, not a token id"),
]
"""Ids every kind of tokenizer's ``decode`` refuses, and the line it says (``top``: the last id)."""


@pytest.fixture(scope="module", params=["bpe", "wordpiece", "unigram", "sentencepiece"])
def each_kind(request: pytest.FixtureRequest, tok: Tokenizer) -> Any:
    """A tokenizer of each kind, in which ``hello world`` is a few ids from 1 up."""
    if request.param == "wordpiece":
        return WordPieceTokenizer(["[UNK]", "hello", "world", "##s", "!"])
    if request.param == "unigram":
        return UnigramTokenizer([("<unk>", 0.0), ("▁hello", -1.0), ("▁world", -1.0), ("▁", -2.0)])
    if request.param == "sentencepiece":
        pytest.importorskip("sentencepiece")
        return Tokenizer.load(fixture_file("spm-unigram-400.model"))
    return tok


def last_id(tok: Any) -> int:
    return tok.max_id if isinstance(tok, Tokenizer) else len(tok.vocab) - 1


@pytest.mark.parametrize(("ids", "expected"), BAD_IDS)
def test_decode_names_a_bad_id_and_its_index(each_kind, ids, expected):
    """Each bad id is a ``TokenIdError`` (a ``ValueError`` too), in one line, whatever the kind."""
    for decode in (each_kind.decode, each_kind.decode_bytes):
        with pytest.raises(TokenIdError, match=f"^{re.escape(expected.format(top=last_id(each_kind)))}$"):
            decode(ids)
    assert issubclass(TokenIdError, BpeError) and issubclass(TokenIdError, ValueError)


def test_decode_reads_iterators_and_arrays_once(each_kind):
    """An iterator's or an array's bad id is named as a list's is, its good ids decoded."""
    tok = each_kind
    ids = tok.encode("hello world")
    assert tok.decode(ids) == "hello world"
    assert tok.decode(iter(ids)) == tok.decode(i for i in ids) == tok.decode(tuple(ids)) == tok.decode(array("I", ids)) == "hello world"
    with pytest.raises(TokenIdError, match="^token id 999999 at index 2 is not in the vocabulary"):
        tok.decode(i for i in [*ids[:2], 999999])
    np = pytest.importorskip("numpy")
    assert tok.decode(np.array(ids)) == tok.decode(list(np.array(ids))) == "hello world"
    with pytest.raises(TokenIdError, match="^token id 999999 at index 2 is not in the vocabulary"):
        tok.decode(np.array([*ids[:2], 999999]))
    with pytest.raises(TokenIdError, match="^token id 65.0 at index 0 is not an integer"):
        tok.decode(np.array([65.0]))
    assert tok.decode([type("Id", (int,), {})(i) for i in ids]) == "hello world"  # int subclasses other than bool
    for mask in (np.array([True, False]), list(np.array([True, False]))):
        with pytest.raises(TokenIdError, match="^token id True at index 0 is a bool, not a token id$"):
            tok.decode(mask)
    assert tok.decode([]) == "" and tok.decode_bytes([]) == b""


ARRAY_KINDS = "hHiIlLqQ"
"""The ``array`` typecodes of ints that ``decode`` reads where they lie."""


@settings(max_examples=60, deadline=None)
@given(ids=st.lists(st.integers(0, 700), max_size=40), kind=st.sampled_from(ARRAY_KINDS), data=st.data())
def test_decode_reads_an_array_of_any_int_kind_as_the_list(tok, ids, kind, data):
    """An array of every kind of int, and NumPy's, decodes as its list does, and a bad id in
    it is named as in the list: the C reads the array in place, the message comes from the list.
    (``tok``'s ids end at 599: some of these are none.)"""
    for given_ids in (array(kind, ids), memoryview(array(kind, ids))):
        try:
            expected: Any = tok.decode(ids), tok.decode_bytes(ids)
        except TokenIdError as e:
            with pytest.raises(TokenIdError, match=f"^{re.escape(str(e))}$"):
                tok.decode(given_ids)
            with pytest.raises(TokenIdError, match=f"^{re.escape(str(e))}$"):
                tok.decode_bytes(given_ids)
        else:
            assert (tok.decode(given_ids), tok.decode_bytes(given_ids)) == expected
    if kind in "hilq" and ids:
        at = data.draw(st.integers(0, len(ids) - 1))
        valid = [i % (tok.max_id + 1) for i in ids]
        negative = array(kind, valid[:at] + [-1] + valid[at + 1 :])
        with pytest.raises(TokenIdError, match=f"^token id -1 at index {at} is not in the vocabulary"):
            tok.decode(negative)


def test_decode_reads_numpy_arrays_and_flat_ids_in_place(tok):
    """A batch's ``FlatIds.ids`` and NumPy arrays of every width decode as their lists do; a
    2-D or strided array is read as a list of its items."""
    texts = ["hello world", "naïve café ☕", ""]
    flat = tok.encode_batch_flat(texts)
    assert tok.decode(flat.ids) == "".join(texts)
    np = pytest.importorskip("numpy")
    ids = tok.encode("hello world, hello again")
    for dtype in (np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64):
        assert tok.decode(np.array(ids, dtype=dtype)) == "hello world, hello again"
    assert tok.decode(np.array(ids * 2)[::2]) == tok.decode((ids * 2)[::2])
    with pytest.raises(TokenIdError, match=r"^token id \[.*\] at index 0 is not an integer$"):
        tok.decode(np.array([ids, ids]))
    with pytest.raises(TokenIdError, match=f"^token id {2**64 - 1} at index 1 is not in the vocabulary"):
        tok.decode(np.array([ids[0], 2**64 - 1], dtype=np.uint64))


BAD_ID = [
    (999999, "token id 999999 is not in the vocabulary (0-{top})"),
    (-1, "token id -1 is not in the vocabulary (0-{top})"),
    (2**70, f"token id {2**70} is not in the vocabulary (0-{{top}})"),
    (True, "token id True is a bool, not a token id"),
    ("a", "token id 'a' is not an integer"),
    (1.5, "token id 1.5 is not an integer"),
    (None, "token id None is not an integer"),
]
"""Ids every kind of tokenizer's ``token`` refuses, and the line it says: decode's, without an index."""


@pytest.mark.parametrize(("i", "expected"), BAD_ID)
def test_token_names_a_bad_id(each_kind, i, expected):
    """Looking up one id's token refuses a bad id as ``decode`` does, whatever the kind."""
    with pytest.raises(TokenIdError, match=f"^{re.escape(expected.format(top=last_id(each_kind)))}$"):
        each_kind.token(i)


def test_token_of_each_id(each_kind):
    """``token`` gives a BPE token's bytes, another kind's vocabulary entry; NumPy's ints
    and other int subclasses are ids, a NumPy bool is not."""
    tok = each_kind
    ids = tok.encode("hello world")
    tokens = [tok.token(i) for i in ids]
    if isinstance(tok, Tokenizer):
        assert tokens == [tok.vocab[i] for i in ids] and b"".join(tokens) == b"hello world"
    else:
        assert "".join(tokens).replace("▁", "") == "helloworld"
    assert [tok.token(type("Id", (int,), {})(i)) for i in ids] == tokens
    np = pytest.importorskip("numpy")
    assert [tok.token(i) for i in np.array(ids)] == tokens
    with pytest.raises(TokenIdError, match="^token id True is a bool, not a token id$"):
        tok.token(np.bool_(True))


def test_decode_half_a_character_gives_replacement(tok):
    euro = "€".encode()
    assert tok.decode([tok.encoder[euro[:1]]]) == "\ufffd"


@settings(max_examples=300)
@given(st.one_of(st.binary(max_size=600), texts.map(str.encode), st.sampled_from([b"a" * 700, SAMPLE.encode()[:2000]])))
def test_compiled_merge_loop_is_the_python_loop(merging, piece):
    """Plain encoding merges in C, the encode view in Python: the same ids, for pieces on
    both sides of the C loop's stack buffer (256 bytes)."""
    assert merging._ranks.ids(piece) == "".join(map(chr, merging._bpe(piece)))


@settings(max_examples=80)
@given(texts)
def test_encode_steps_is_the_encode_loop(tok, text):
    traces = tok.encode_steps(text)
    assert [i for t in traces for i in t.ids] == tok.encode(text)
    assert "".join(t.text for t in traces) == text
    for trace in traces:
        if trace.special:
            assert trace.steps == []
            continue
        first, last = trace.steps[0], trace.steps[-1]
        assert first.parts == [tok.encoder[bytes([b])] for b in trace.text.encode()]
        assert last.chosen is None and last.after == trace.ids
        for step, following in zip(trace.steps, trace.steps[1:], strict=False):
            assert step.after == following.parts
            ranks = [r for r in step.ranks if r is not None]
            assert step.chosen == step.ranks.index(min(ranks))
            assert len(step.after) == len(step.parts) - 1


def test_encode_steps_story_of_one_word(tok):
    (trace,) = tok.encode_steps(" lighthouse")
    assert trace.ids == tok.encode(" lighthouse")
    assert len(trace.steps) == len(" lighthouse") - len(trace.ids) + 1
    assert all(len(s.ranks) == len(s.parts) - 1 for s in trace.steps)


@settings(max_examples=80)
@given(texts, st.lists(st.integers(0, 400), max_size=8))
def test_encode_iterable_equals_encode_wherever_the_text_is_cut(tok, text, cuts):
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    assert list(tok.encode_iterable(pieces)) == tok.encode(text)


def test_encode_iterable_cut_inside_a_special_token(tok):
    text = "one two<|endoftext|><|endoftext|> three  four"
    for i in range(len(text)):
        assert list(tok.encode_iterable([text[:i], text[i:]])) == tok.encode(text)


def test_small_cache_gives_the_same_ids(tok):
    small = Tokenizer(tok.vocab, tok.merges, tok.special_tokens, cache_size=50)
    text = SAMPLE * 2
    assert small.encode(text) == tok.encode(text)
    assert list(small.encode_iterable(text.splitlines(keepends=True))) == tok.encode(text)


def test_custom_pattern_without_chunking():
    trainer = Trainer.from_text(SAMPLE, 300, pattern=r"\S+|\s+")
    trainer.run()
    tok = Tokenizer.from_trainer(trainer)
    assert tok.pretokenizer.chunked is False
    ids = tok.encode(SAMPLE)
    assert tok.decode(ids) == SAMPLE
    assert list(tok.encode_iterable(SAMPLE.splitlines(keepends=True))) == ids


def test_streaming_memory_stays_constant(tok):
    """Several megabytes streamed line by line: the peak beyond the tokenizer (whose cache
    is already warm) stays under 1 MB, whatever the length of the stream."""
    lines = SAMPLE.splitlines(keepends=True)
    repeats = 3_000_000 // len(SAMPLE)
    tok.encode(SAMPLE)

    def stream():
        for n in range(repeats):
            yield f"{n} "  # a new chunk now and then, so the cache keeps working
            yield from lines

    tracemalloc.start()
    try:
        count = sum(1 for _ in tok.encode_iterable(stream()))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count > 500_000
    assert peak < 1 << 20


def test_a_tokenizer_pickles_as_what_it_is_made_of(tok):
    """The training screen's process hands its tokenizer to the encode view pickled."""
    import pickle

    copy = pickle.loads(pickle.dumps(tok))
    assert (copy.vocab, copy.merges, copy.special_tokens, copy.pattern, copy.direct) == (
        tok.vocab,
        tok.merges,
        tok.special_tokens,
        tok.pattern,
        tok.direct,
    )
    assert copy.encode(SAMPLE) == tok.encode(SAMPLE)
