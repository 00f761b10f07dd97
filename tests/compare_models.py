"""Tiny WordPiece and Unigram ``tokenizer.json`` files, trained with Hugging Face tokenizers
on the bundled sample, and GPT-2's files from tests/fixtures, for the compare tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, fixture_file

SAMPLE = ROOT / "sample_corpora" / "sample.txt"


def wordpiece_json(directory: Path) -> Path:
    """BERT's recipe: lower-cased, split on spaces and punctuation, ``##`` continuations."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tok.train([str(SAMPLE)], tokenizers.trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[UNK]", "[CLS]"]))
    path = directory / "wordpiece.json"
    tok.save(str(path))
    return path


def unigram_json(directory: Path) -> Path:
    """SentencePiece's recipe: spaces become ``▁``, pieces kept by likelihood."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.Unigram())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
    tok.train([str(SAMPLE)], tokenizers.trainers.UnigramTrainer(vocab_size=200, special_tokens=["<unk>"], unk_token="<unk>"))
    path = directory / "unigram.json"
    tok.save(str(path))
    return path


def gpt2_dir(directory: Path) -> Path:
    """GPT-2's ``vocab.json`` + ``merges.txt`` in a directory."""
    gpt2 = directory / "gpt2"
    gpt2.mkdir()
    shutil.copy(fixture_file("gpt2_vocab.json"), gpt2 / "vocab.json")
    shutil.copy(fixture_file("gpt2_merges.txt"), gpt2 / "merges.txt")
    return gpt2


LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORDS = "the cat keep watch wave token cut same text hello un different".split()
PIECES = "##er ##ed ##izer ##ly ##believ ##able ##ers".split()


def fixed_wordpiece_json(directory: Path) -> Path:
    """A WordPiece model with a vocabulary written out (training numbers ties differently
    from run to run): BERT's normalizer and pre-tokenizer, whole letters as a fallback."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab = ["[UNK]", *WORDS, *PIECES, *LETTERS, *(f"##{c}" for c in LETTERS), *",.!'1234", *(f"##{c}" for c in "1234")]
    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    path = directory / "wordpiece.json"
    tok.save(str(path))
    return path


def fixed_unigram_json(directory: Path) -> Path:
    """A Unigram model with its pieces and log-probabilities written out, ``▁`` for spaces."""
    tokenizers = pytest.importorskip("tokenizers")
    pieces = [("<unk>", 0.0), ("▁", -3.0), *((f"▁{w}", -4.0) for w in WORDS), *((p.removeprefix("##"), -5.0) for p in PIECES)]
    pieces += [(c, -8.0) for c in LETTERS + LETTERS.upper() + ",.!'1234"]
    tok = tokenizers.Tokenizer(tokenizers.models.Unigram(pieces, unk_id=0))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace()
    path = directory / "unigram.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a WordPiece and a Unigram ``tokenizer.json``."""
    directory = tmp_path_factory.mktemp("models")
    wordpiece_json(directory)
    unigram_json(directory)
    return directory
