"""WordPiece encoding (``engine.encode.wordpiece``) against Hugging Face ``tokenizers`` on
the same ``tokenizer.json``: ids, decoding and spans on random text, and the steps of an
encode telling the same story as its ids."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import AddedToken, TokenIdError
from engine.corpus.words import _NOT_WHITE_SPACE, lowercase
from engine.encode.wordpiece import WordPieceTokenizer, WordTrace
from engine.formats.wordpiece_files import BERT_SPECIAL_TOKENS, WHITE_SPACE, WordPieceDecoder
from tests.conftest import fixture_file
from tests.test_encode_fast import unflattened

tokenizers = pytest.importorskip("tokenizers")

ENGLISH = fixture_file("corpus.en").read_text(encoding="utf-8")
CHINESE = fixture_file("zh-xiyouji-9k.txt").read_text(encoding="utf-8")
SPECIALS = list(BERT_SPECIAL_TOKENS)

texts = st.lists(
    st.one_of(
        st.text(st.characters(exclude_categories=["Cs"]), max_size=8),
        st.text(st.characters(max_codepoint=0x3000, exclude_categories=["Cs"]), max_size=8),
        st.sampled_from(ENGLISH.split()[:3000]),
        st.sampled_from([CHINESE[i : i + 6] for i in range(0, 3000, 7)]),
        st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2028", "\x85", "\x1c", "\x1f", "\u200b", "\x00"]),
        st.sampled_from(["😀", "👍🏽", "naïve", "İstanbul", "ΣΑΣ ΟΔΟΣ", "Straße", "’s", "don't", "...", "!?", "#1", "(x)", "ß", "ǅ"]),
        st.sampled_from([*SPECIALS, "[CLS][SEP]", "[MASK", "CLS]", "[cls]", "[UNK]"]),
        st.sampled_from(["a" * 100, "a" * 101, "ab" * 60, "你" * 101, "😀" * 101]),
    ),
    max_size=24,
).map("".join)


def hf_trained(directory: Path, normalizer: object | None, vocab_size: int = 1500) -> Path:
    """A WordPiece ``tokenizer.json`` trained by HF on English and Chinese; its vocabulary
    lacks most of Unicode, so random text meets ``[UNK]``."""
    corpus = directory / "corpus.txt"
    corpus.write_text(ENGLISH + CHINESE, encoding="utf-8")
    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tok.decoder = tokenizers.decoders.WordPiece()
    tok.train([str(corpus)], tokenizers.trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS))
    path = directory / "tokenizer.json"
    tok.save(str(path))
    return path


NORMALIZERS = {
    "none": lambda: None,
    "lowercase": lambda: tokenizers.normalizers.Lowercase(),
    "bert-chinese": lambda: tokenizers.normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=True
    ),
}


@pytest.fixture(scope="module", params=list(NORMALIZERS))
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[WordPieceTokenizer, object]:
    """Ours and HF's tokenizer from one HF-trained file."""
    path = hf_trained(tmp_path_factory.mktemp(request.param), NORMALIZERS[request.param]())
    ours = WordPieceTokenizer.load(path)
    assert ours.lowercase == (request.param != "none")
    assert ours.handle_chinese_chars == (request.param == "bert-chinese")
    return ours, tokenizers.Tokenizer.from_file(str(path))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_ids_equal_hf(pair, text):
    ours, hf = pair
    encoding = hf.encode(text, add_special_tokens=False)
    assert ours.encode(text) == encoding.ids
    assert [(s.start, s.end) for s in ours.encode_spans(text)] == encoding.offsets
    assert ours.decode(encoding.ids) == hf.decode(encoding.ids, skip_special_tokens=False)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.integers(0, 1499), max_size=30))
def test_decode_equals_hf(pair, ids):
    ours, hf = pair
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False)
    assert ours.decode_bytes(ids) == ours.decode(ids).encode("utf-8")


def test_a_corpus_encodes_as_hf(pair):
    ours, hf = pair
    text = ENGLISH + CHINESE
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids
    lines = text.splitlines()
    assert ours.encode_batch(lines) == [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    assert unflattened(ours.encode_batch_flat(lines)) == ours.encode_batch(lines)
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids  # again, from the caches


def test_lowercase_equals_hf_lowercase_on_every_code_point():
    """Python lowers by its own Unicode tables and HF by Rust's, of other versions (U+1C89 is
    cased in one only): ``lowercase`` goes by HF's, and a word-final Σ becomes σ."""
    lower = tokenizers.normalizers.Lowercase().normalize_str
    every = (chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    differ = [f"U+{ord(c):04X}" for c in every if lower(f"AΣ{c}Σ {c}") != lowercase(f"AΣ{c}Σ {c}")]
    assert not differ, differ[:10]


# -- a vocabulary written out -------------------------------------------------------------


VOCAB = [*SPECIALS, "un", "##aff", "##able", "a", "##b", "b", "##c", "c", "hug", "##s", "!", ",", "'", "s", "##a", "ab"]


def small(**options: object) -> WordPieceTokenizer:
    return WordPieceTokenizer(VOCAB, SPECIALS, **options)  # type: ignore[arg-type]


def test_longest_match_first():
    tok = small()
    assert [tok.token(i) for i in tok.encode("unaffable hugs, abc!")] == ["un", "##aff", "##able", "hug", "##s", ",", "ab", "##c", "!"]
    assert tok.encode("xyz") == [tok.unk_id]
    assert tok.encode("abx") == [tok.unk_id]  # ##x is missing: the whole word is [UNK], not ab + [UNK]
    assert tok.encode("hug[MASK]s") == [VOCAB.index("hug"), VOCAB.index("[MASK]"), VOCAB.index("s")]
    assert tok.encode("a" * 100) == [VOCAB.index("a")] + [VOCAB.index("##a")] * 99
    assert tok.encode("a" * 101) == [tok.unk_id]
    assert small(max_input_chars_per_word=3).encode("abca ab") == [tok.unk_id, VOCAB.index("ab")]


def test_steps_tell_the_matching():
    tok = small()
    traces = tok.encode_steps("Unaffable [CLS] abx\u3000hugs" + " b" * 2)
    assert [t.word for t in traces] == ["Unaffable", "[CLS]", "abx", "hugs", "b", "b"]
    first = traces[0]
    assert first.unknown_reason == "no piece of the vocabulary starts this rest: 'Unaffable'"
    assert first.ids == (tok.unk_id,) and not first.matches
    longest = max(map(len, VOCAB))  # [MASK], ##able: longer candidates are not looked up
    assert [t.piece for t in first.dead_end] == ["Unaffable"[:k] for k in range(longest, 0, -1)]
    assert not any(t.found for t in first.dead_end)
    assert traces[1] == WordTrace("[CLS]", 10, 15, (), (VOCAB.index("[CLS]"),), special=True)
    abx = traces[2]
    assert [(m.start, m.end, m.token) for m in abx.matches] == [(0, 2, "ab")]
    assert abx.unknown_reason == "no piece of the vocabulary starts this rest: '##x'"
    assert (abx.start, abx.end) == (16, 19)
    hugs = traces[3]
    assert [(m.token, [(t.piece, t.found) for t in m.tried]) for m in hugs.matches] == [
        ("hug", [("hugs", False), ("hug", True)]),
        ("##s", [("##s", True)]),
    ]
    assert small(lowercase=True).encode_steps("UNAFFABLE")[0].ids == tuple(small().encode("unaffable"))
    assert small().encode_steps("a" * 101)[0].unknown_reason == "longer than 100 characters"


@settings(max_examples=300)
@given(text=texts)
def test_steps_and_spans_agree_with_encode(text):
    for tok in (small(), small(lowercase=True)):
        ids = tok.encode(text)
        traces = tok.encode_steps(text)
        assert [i for t in traces for i in t.ids] == ids
        assert [s.id for s in tok.encode_spans(text)] == ids
        for t in traces:
            if t.special:
                assert text[t.start : t.end] == t.word
                continue
            if t.unknown_reason is None:
                assert t.ids == tuple(m.id for m in t.matches)
                assert "".join(t.word[m.start : m.end] for m in t.matches) == t.word
            else:
                assert t.ids == (tok.unk_id,)
            for m in t.matches:
                assert [x.found for x in m.tried] == [False] * (len(m.tried) - 1) + [True]
                assert m.tried[-1].piece == m.token == tok.token(m.id)


def test_no_vocabulary_piece_continues_a_word():
    tok = WordPieceTokenizer(["[UNK]", "a", "b"])
    assert tok.encode("a b ab") == [1, 2, 0]
    assert tok.encode_steps("ab")[0].unknown_reason == "no piece of the vocabulary starts this rest: '##b'"


def test_bad_vocabularies():
    with pytest.raises(ValueError, match="not in the vocabulary"):
        WordPieceTokenizer(["a", "b"])
    with pytest.raises(ValueError, match="twice"):
        WordPieceTokenizer(["[UNK]", "a", "a"])
    with pytest.raises(ValueError, match="which the vocabulary gives to 'a'"):
        WordPieceTokenizer(["[UNK]", "a"], [AddedToken("x", 1)])
    tok = WordPieceTokenizer(["[UNK]", "a"], ["<new>"])
    assert tok.special_ids == {"<new>": 2} and tok.vocab[2] == "<new>"
    with pytest.raises(TokenIdError, match=r"^token id 7 at index 1 is not in the vocabulary \(0-2\)$"):
        tok.decode([0, 7])


def test_decode_follows_a_replaced_decoder_and_pickles():
    tok = WordPieceTokenizer(["[UNK]", "hello", "##s", ".", "world"])
    assert tok.decode([1, 2, 3, 4]) == "hellos. world"
    tok.decoder = WordPieceDecoder(cleanup=False)
    assert tok.decode([1, 2, 3, 4]) == "hellos . world"
    tok.decoder = None
    assert tok.decode([1, 2, 3, 4]) == "hello ##s . world"
    assert pickle.loads(pickle.dumps(tok)).decode([4, 1]) == "world hello"


def test_whitespace_as_str_split_and_bert_see_it():
    """``encode`` cuts at whitespace with ``str.split`` unless the text holds a character
    where it and BERT's ``White_Space`` disagree."""
    every = "".join(chr(c) for c in range(0xD800)) + "".join(chr(c) for c in range(0xE000, sys.maxunicode + 1))
    assert set(WHITE_SPACE) == set(regex.findall(r"\p{White_Space}", every))
    assert {c for c in every if c.isspace()} ^ set(WHITE_SPACE) == set(_NOT_WHITE_SPACE)
    assert WordPieceTokenizer(["[UNK]", "a", "b", "##\x1c", "##b"]).encode("a\x1cb a\x1c b") == [1, 3, 4, 1, 3, 2]


def test_encode_is_quick_on_a_corpus(pair):
    """Not a benchmark: a guard against a slow path taken by mistake (HF is the yardstick)."""
    import time

    ours, hf = pair
    text = (ENGLISH * 4)[:400_000]
    started = time.perf_counter()
    ours.encode(text)
    mine = time.perf_counter() - started
    started = time.perf_counter()
    hf.encode(text, add_special_tokens=False)
    theirs = time.perf_counter() - started
    assert mine < 3 * theirs + 0.5
