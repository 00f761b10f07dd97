"""The tokenizers of a comparison: character, byte, word, our BPE and Hugging Face models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import CorpusError, ModelFileError, PreTokenizer, Tokenizer, Trainer
from engine.compare.baselines import ByteTokenizer, CharacterTokenizer, Token, WordTokenizer, byte_offsets
from engine.compare.comparison import BpeSpans, compare, corpus_tokenizers, load_span_tokenizer
from tests.compare_models import gpt2_dir
from tests.conftest import ROOT

CORPUS = "the cat sat on the mat. the cat ate 12 fish!<|endoftext|>你好 world 🌍"
SPECIAL = ["<|endoftext|>"]
texts = st.text(st.characters(codec="utf-8"), max_size=60) | st.lists(
    st.sampled_from(["the", " cat", " dog", "!", "你好", "🌍", " ", "\n", "12345", "<|endoftext|>", "é"]), max_size=20
).map("".join)


@pytest.fixture(scope="module")
def word() -> WordTokenizer:
    return WordTokenizer.from_text(CORPUS, SPECIAL)


@pytest.fixture(scope="module")
def bpe() -> BpeSpans:
    trainer = Trainer.from_text(CORPUS * 3, 300, SPECIAL)
    trainer.run()
    return BpeSpans(Tokenizer.from_trainer(trainer), "bpe")


def covers_exactly(text: str, tokens: list[Token]) -> bool:
    """The spans lie end to end from 0 to the text's last byte."""
    ends = [0, *(t.end for t in tokens)]
    return all(t.start == end for t, end in zip(tokens, ends, strict=False)) and ends[-1] == len(text.encode("utf-8"))


@given(texts)
def test_byte_offsets_are_each_prefix_in_utf8(text: str) -> None:
    assert byte_offsets(text) == [len(text[:i].encode("utf-8")) for i in range(len(text) + 1)]


@given(texts)
def test_character_tokens_are_code_points(text: str) -> None:
    tokens = CharacterTokenizer().tokenize(text)
    assert [t.id for t in tokens] == list(map(ord, text))  # the lecture's encode
    assert covers_exactly(text, tokens)
    raw = text.encode("utf-8")
    assert all(raw[t.start : t.end] == t.piece == chr(t.id).encode("utf-8") for t in tokens)
    assert not any(t.unknown for t in tokens)


@given(texts)
def test_byte_tokens_are_utf8_bytes(text: str) -> None:
    tokens = ByteTokenizer().tokenize(text)
    raw = text.encode("utf-8")
    assert [t.id for t in tokens] == list(raw)
    assert covers_exactly(text, tokens)
    assert bytes(t.id for t in tokens).decode("utf-8") == text  # the lecture's decode


@given(texts)
def test_word_tokens_are_the_pretokens(word: WordTokenizer, text: str) -> None:
    tokens = word.tokenize(text)
    assert covers_exactly(text, tokens)
    pretok = PreTokenizer("gpt2", SPECIAL)
    expected = [w for piece, special in pretok.split_special(text) for w in ([piece] if special else pretok.pretokens(piece))]
    assert [t.piece.decode("utf-8") for t in tokens] == expected
    known = {w.decode("utf-8") for w in pretok.count(CORPUS)}
    assert sum(t.unknown for t in tokens) == sum(w not in known and w not in SPECIAL for w in expected)
    for t in tokens:
        assert (t.id == 0) == t.unknown
        assert t.unknown or word.words[t.id] == t.piece.decode("utf-8")


def test_word_vocabulary(word: WordTokenizer) -> None:
    """Unknown first, the special tokens, then the words by count (ties in byte order)."""
    assert word.words[:4] == ["<unk>", "<|endoftext|>", " cat", " the"]  # twice each: a tie, in byte order
    assert word.vocab_size == len(set(PreTokenizer("gpt2", SPECIAL).count(CORPUS))) + 2
    tokens = word.tokenize("the dog<|endoftext|>")
    assert [(t.piece, t.id, t.unknown, t.special) for t in tokens] == [
        (b"the", word.ids["the"], False, False),
        (b" dog", 0, True, False),
        (b"<|endoftext|>", 1, False, True),
    ]


@given(texts)
def test_bpe_adapter_spans_are_the_encode(bpe: BpeSpans, text: str) -> None:
    tokens = bpe.tokenize(text)
    assert [t.id for t in tokens] == bpe.tokenizer.encode(text)
    assert covers_exactly(text, tokens)
    raw = text.encode("utf-8")
    assert all(raw[t.start : t.end] == t.piece for t in tokens)
    assert [t.special for t in tokens] == [t.piece == b"<|endoftext|>" for t in tokens]


@given(texts)
def test_differences_are_spans_the_reference_lacks(word: WordTokenizer, bpe: BpeSpans, text: str) -> None:
    rows = compare(text, [CharacterTokenizer(), ByteTokenizer(), word, bpe], reference=3)
    reference = {(t.start, t.end) for t in rows[3].tokens}
    assert not any(rows[3].differs)
    for row in rows:
        assert len(row.tokens) == len(row.differs)
        if row is not rows[3]:
            assert row.differs == [(t.start, t.end) not in reference for t in row.tokens]
        size = len(text.encode("utf-8"))
        assert row.bytes_per_token == (size / len(row.tokens) if row.tokens else 0.0)


def test_compare_counts_on_the_lectures_example(word: WordTokenizer) -> None:
    text = "Hello, 🌍! 你好!"
    char, byte, words = compare(text, [CharacterTokenizer(), ByteTokenizer(), word], reference=0)
    assert [t.id for t in char.tokens] == [72, 101, 108, 108, 111, 44, 32, 127757, 33, 32, 20320, 22909, 33]
    assert (len(char.tokens), len(byte.tokens)) == (13, 20)
    assert byte.bytes_per_token == 1.0 and char.bytes_per_token == 20 / 13
    # the four bytes of 🌍 and the three of each Chinese character are not characters
    assert byte.differing == 4 + 3 + 3
    assert [t.piece for t in words.tokens] == [b"Hello", b",", " 🌍!".encode(), " 你好".encode(), b"!"]
    # the corpus has "!" but not "Hello", ",", " 🌍!" or " 你好" (it has "你好" without the space)
    assert [t.unknown for t in words.tokens] == [True, True, True, True, False]
    assert words.unknown == 4


# -- model files ----------------------------------------------------------------------------


def test_wordpiece_through_tokenizers(models: Path) -> None:
    import tokenizers

    path = models / "wordpiece.json"
    row = load_span_tokenizer(path)
    assert (row.kind, row.name, row.vocab_size) == ("WordPiece", "wordpiece.json", 300)
    text = "The lighthouse cat, Ωmega 你好!"
    tokens = row.tokenize(text)
    encoding = tokenizers.Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False)
    assert [t.id for t in tokens] == encoding.ids
    assert [t.piece.decode() for t in tokens] == encoding.tokens
    assert any(t.piece.startswith(b"##") for t in tokens)
    raw = text.encode("utf-8")
    # WordPiece lower-cases and drops the spaces: spans point into the text as typed
    assert [raw[t.start : t.end].decode().lower() for t in tokens if not t.unknown] == [
        t.piece.decode().removeprefix("##") for t in tokens if not t.unknown
    ]
    unknown = [raw[t.start : t.end].decode() for t in tokens if t.unknown]
    assert unknown and all(t.id == 0 for t in tokens if t.unknown)  # [UNK] is id 0
    assert "Ωmega" in unknown


def test_unigram_through_tokenizers(models: Path) -> None:
    row = load_span_tokenizer(models / "unigram.json")
    assert row.kind == "Unigram" and row.vocab_size == 200
    tokens = row.tokenize("the cat Ω")
    assert tokens[0].piece.startswith("▁".encode())
    assert [t.unknown for t in tokens] == [t.id == 0 for t in tokens]  # unk_id 0
    assert tokens[-1].unknown and tokens[-1].start == len(b"the cat ")


def test_gpt2_files_load_through_our_engine(tmp_path: Path) -> None:
    row = load_span_tokenizer(gpt2_dir(tmp_path))
    assert isinstance(row, BpeSpans) and row.kind == "BPE" and row.vocab_size == 50257
    tokens = row.tokenize("Hello world<|endoftext|>")
    assert [t.id for t in tokens] == [15496, 995, 50256] and tokens[-1].special


def test_our_tokenizer_json_loads_through_our_engine(bpe: BpeSpans, tmp_path: Path) -> None:
    bpe.tokenizer.save_dir(tmp_path)
    row = load_span_tokenizer(tmp_path / "tokenizer.json")
    assert isinstance(row, BpeSpans)
    assert row.tokenize(CORPUS) == bpe.tokenize(CORPUS)


def test_bad_model_files(models: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="no such file or directory"):
        load_span_tokenizer(tmp_path / "missing.json")
    truncated = tmp_path / "truncated.json"
    truncated.write_text((models / "wordpiece.json").read_text()[:500])
    with pytest.raises(ModelFileError, match="truncated JSON"):
        load_span_tokenizer(truncated)
    broken = json.loads((models / "wordpiece.json").read_text())
    broken["model"]["vocab"] = "nonsense"
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(ModelFileError, match="cannot open this WordPiece tokenizer"):
        load_span_tokenizer(tmp_path / "broken.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFileError, match="holds neither"):
        load_span_tokenizer(tmp_path / "empty")


def test_without_the_tokenizers_package(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import tokenizers now fails
    with pytest.raises(ModelFileError, match=r"a WordPiece tokenizer opens through Hugging Face tokenizers: pip install 'bpe-tui\[hf\]'"):
        load_span_tokenizer(models / "wordpiece.json")


def test_engine_imports_without_tokenizers(tmp_path: Path) -> None:
    """A ``tokenizers`` that cannot be imported stands in for a missing package."""
    (tmp_path / "tokenizers.py").write_text("raise ImportError('not installed')\n")
    code = "import engine, engine.compare.comparison, engine.compare.baselines, engine.compare.hf_models; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": f"{tmp_path}:{ROOT}"}, capture_output=True, text=True)
    assert done.stdout == "ok\n", done.stderr


def test_corpus_ladder(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 3, encoding="utf-8")
    char, byte, word, bpe, wordpiece, unigram = corpus_tokenizers(corpus, 270, name="c")
    kinds = ["character", "byte", "word", "BPE", "WordPiece", "Unigram"]
    assert [r.kind for r in (char, byte, word, bpe, wordpiece, unigram)] == kinds
    assert (word.name, bpe.name, bpe.vocab_size) == ("word (c)", "BPE (c)", 270)
    assert wordpiece.name == "WordPiece (c)" and wordpiece.vocab_size <= 270  # a small corpus runs out of pairs first
    assert [t.piece for t in wordpiece.tokenize("the cat")] == [b"the", b"cat"]
    assert unigram.name == "Unigram (c)" and unigram.vocab_size <= 270  # and of seeds to prune
    assert [(t.start, t.end) for t in unigram.tokenize("the cat")] == [(0, 3), (3, 7)]  # ▁the, then ▁cat with its space
    assert word.tokenize("the cat")[1].id == WordTokenizer.from_text(CORPUS, SPECIAL).ids[" cat"]
    (tmp_path / "only.txt").write_text("<|endoftext|>")
    with pytest.raises(CorpusError, match="no words to build a vocabulary from"):
        corpus_tokenizers(tmp_path / "only.txt")


def test_a_bpe_our_engine_refuses_opens_through_tokenizers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Classic word-level BPE (``</w>`` ends a word) is not byte-level: Hugging Face opens it."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        [CORPUS * 5], tokenizers.trainers.BpeTrainer(vocab_size=60, special_tokens=["<unk>"], end_of_word_suffix="</w>")
    )
    path = tmp_path / "classic.json"
    tok.save(str(path))
    row = load_span_tokenizer(path)
    assert not isinstance(row, BpeSpans) and row.kind == "BPE"
    assert [t.id for t in row.tokenize("the cat")] == tok.encode("the cat").ids
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(
        ModelFileError,
        match=r"end_of_word_suffix='</w>' is not supported \(or pip install 'bpe-tui\[hf\]' to open it with Hugging Face tokenizers\)",
    ):
        load_span_tokenizer(path)
