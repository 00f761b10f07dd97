"""``bpe-tui train --algorithm wordpiece`` run as a user runs it: the summary, the files that
Hugging Face opens, the trained vocabulary held to the rule, and one line for bad input."""

from __future__ import annotations

import json

import pytest

from engine import Tokenizer
from engine.corpus.words import count_file_words
from engine.train.wordpiece.reference import train_wordpiece_reference
from tests.conftest import fixture_file, refused, run_cli

CORPUS = str(fixture_file("corpus.en"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """corpus.en at 400, headless, into a directory of its own."""
    out = tmp_path_factory.mktemp("wp")
    done = run_cli("train", CORPUS, "--algorithm", "wordpiece", "--headless", "--vocab-size", "400", "--out", str(out / "tok"), cwd=out)
    assert done.returncode == 0, done.stderr
    return out / "tok", done


def test_headless_writes_tokenizer_json_and_vocab_txt(trained):
    out, done = trained
    assert sorted(p.name for p in out.iterdir()) == ["tokenizer.json", "vocab.txt"]
    assert "400 tokens (5 special + " in done.stdout and "merges" in done.stdout
    vocab = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(vocab) == 400
    model = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    assert model["model"]["type"] == "WordPiece" and model["pre_tokenizer"]["type"] == "BertPreTokenizer"
    assert model["model"]["vocab"] == {token: i for i, token in enumerate(vocab)}


def test_the_vocabulary_is_the_rules_id_for_id(trained):
    out, _ = trained
    vocab, _ = train_wordpiece_reference(count_file_words(CORPUS, "bert"), 400)
    assert (out / "vocab.txt").read_text(encoding="utf-8").splitlines() == vocab


def test_the_saved_model_opens_and_encodes_as_hugging_face_does(trained):
    tokenizers = pytest.importorskip("tokenizers")
    out, _ = trained
    ours = Tokenizer.load(out)
    theirs = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    text = fixture_file("corpus.en").read_text(encoding="utf-8")[:5000] + " naïve\u3000日本語 [CLS] x\u00a0y"
    assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids


def test_lowercase_is_saved_with_the_model(tmp_path):
    done = run_cli(
        "train", CORPUS, "--algorithm", "wordpiece", "--lowercase", "--headless", "--vocab-size", "300", "--out", "tok", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    vocab = (tmp_path / "tok" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert not any(c.isupper() for token in vocab[5:] for c in token)
    assert json.loads((tmp_path / "tok" / "tokenizer.json").read_text(encoding="utf-8"))["normalizer"]["type"] == "Lowercase"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--algorithm", "sentencepiece"], "argument --algorithm: invalid choice: 'sentencepiece'"),
        (["--algorithm", "wordpiece", "--vocab-size", "20"], "vocab size 20 is below the 5 special tokens and"),
        (["--algorithm", "wordpiece", "--special-token", "[UNK]", "--vocab-size", "1"], "vocab size 1 is below the 1 special token and"),
        (["--algorithm", "wordpiece", "--classic"], "--classic is classic BPE: it does not go with --algorithm wordpiece"),
        (["--algorithm", "wordpiece", "--resume", "out"], "--resume does not apply to --algorithm wordpiece"),
        (["--algorithm", "wordpiece", "--pattern", "gpt4"], "--pattern does not apply to --algorithm wordpiece"),
        (["--algorithm", "wordpiece", "--follow", "the"], "--follow follows words through byte-level BPE: not with --algorithm wordpiece"),
        (["--algorithm", "wordpiece", "--special-token", "<s>"], "WordPiece needs [UNK] among its special tokens"),
        (["--lowercase"], "--lowercase goes with --algorithm wordpiece"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path, args, message):
    refused(run_cli("train", CORPUS, "--headless", *args, cwd=tmp_path), message)
    assert not (tmp_path / "out").exists()
