"""Tiny WordPiece and Unigram ``tokenizer.json`` files, trained with Hugging Face tokenizers
on the bundled sample, and GPT-2's files from ../shared, for the compare tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import ROOT, shared_file

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
    """GPT-2's ``vocab.json`` + ``merges.txt`` in a directory (skips without ../shared)."""
    gpt2 = directory / "gpt2"
    gpt2.mkdir()
    shutil.copy(shared_file("fixtures", "gpt2_vocab.json"), gpt2 / "vocab.json")
    shutil.copy(shared_file("fixtures", "gpt2_merges.txt"), gpt2 / "merges.txt")
    return gpt2
