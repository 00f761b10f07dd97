"""Unigram encoding (``engine.encode.unigram``) against Hugging Face ``tokenizers`` running the
``tokenizer.json`` we save: the same ids and the same decoded text on random texts (mixed
scripts, odd whitespace, characters the model never saw, ``<unk>`` and ``▁`` written out);
the lattice and runners-up ``encode_steps`` and ``nbest`` give; the file read back, and bad
files refused in one line."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer

from engine.encode.unigram import UnigramTokenizer
from engine.errors import ModelFileError, TokenIdError
from engine.formats.unigram_files import is_unigram, read_unigram
from engine.train.unigram.rule import count_file_words
from engine.train.unigram.trainer import UnigramTrainer
from tests.conftest import fixture_file
from tests.test_encode_fast import unflattened

PIECES = [
    "the",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "<unk>",
    "▁",
    "ing",
    "山",
    "水",
    "悟空",
    "é",
    "e\u0301",
    "Ω",
    "😀",
    "\x00",
    "q",
    "Z",
    ",",
    "7",
]
"""Bits of text to build random texts from: words of the corpora, runs of whitespace, the
unknown token and the replacement written out, characters neither corpus has."""
TEXTS = st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=12).map("".join)


def trained(name: str, vocab_size: int) -> UnigramTokenizer:
    trainer = UnigramTrainer(count_file_words(fixture_file(name)), vocab_size)
    trainer.run()
    return UnigramTokenizer.from_trainer(trainer)


@pytest.fixture(scope="module", params=[("corpus.en", 600), ("zh-xiyouji-9k.txt", 800)], ids=["en", "zh"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[UnigramTokenizer, HFTokenizer]:
    ours = trained(*request.param)
    directory = tmp_path_factory.mktemp("unigram")
    ours.save_dir(directory)
    return ours, HFTokenizer.from_file(str(directory / "tokenizer.json"))


@settings(max_examples=300)
@given(text=TEXTS)
def test_ids_and_decoding_equal_hugging_faces(pair: tuple[UnigramTokenizer, HFTokenizer], text: str) -> None:
    ours, theirs = pair
    ids = ours.encode(text)
    assert ids == theirs.encode(text, add_special_tokens=False).ids
    assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=False)


def test_a_whole_corpus_encodes_as_hugging_face_does(pair: tuple[UnigramTokenizer, HFTokenizer]) -> None:
    ours, theirs = pair
    for name in ("corpus.en", "zh-xiyouji-9k.txt"):
        text = fixture_file(name).read_text(encoding="utf-8")
        assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids
        assert ours.encode_batch(text.split("\n")) == [e.ids for e in theirs.encode_batch(text.split("\n"), add_special_tokens=False)]
        assert unflattened(ours.encode_batch_flat(text.split("\n"))) == ours.encode_batch(text.split("\n"))


@settings(max_examples=100)
@given(text=TEXTS)
def test_without_the_normalizer_spaces_count_one_by_one(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    ours = UnigramTokenizer(
        [("<unk>", 0.0), ("▁", -1.0), ("▁the", -2.0), ("t", -3.0), ("he", -2.5), ("h", -4), ("e", -4)], collapse_spaces=False
    )
    path = tmp_path_factory.mktemp("plain") / "tokenizer.json"
    ours.save(path)
    assert json.loads(path.read_text(encoding="utf-8"))["normalizer"] is None
    theirs = HFTokenizer.from_file(str(path))
    assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids
    assert UnigramTokenizer.load(path).encode(text) == ours.encode(text)


def test_encode_steps_show_each_words_lattice_and_best_path(pair: tuple[UnigramTokenizer, HFTokenizer]) -> None:
    ours, _ = pair
    text = "the  morning<unk>山 😀😀x"
    steps = ours.encode_steps(text)
    assert [i for s in steps for i in s.ids] == ours.encode(text)
    assert [s.word for s in steps if s.special] == ["<unk>"]
    for step in (s for s in steps if not s.special):
        assert step.word.startswith("▁")
        path = [step.nodes[k] for k in step.best]
        assert "".join(n.piece for n in path) == step.word
        assert [n.end for n in path[:-1]] == [n.start for n in path[1:]] and path[-1].end == len(step.word)
        assert math.isclose(step.score, sum(n.log_prob for n in path))
        for node in step.nodes:
            assert node.unknown or ours.vocab[node.id] == (node.piece, node.log_prob)
            assert step.word[node.start : node.end] == node.piece
    assert any(n.unknown for s in steps for n in s.nodes)  # 😀 is in neither corpus


def test_nbest_gives_the_best_path_then_its_runners_up(pair: tuple[UnigramTokenizer, HFTokenizer]) -> None:
    ours, _ = pair
    long_pieces = [p for p, _ in ours.vocab[1:] if len(p) >= 2 and "▁" not in p]  # by score: the most probable first
    for word in ("▁" + long_pieces[0], "▁" + long_pieces[0] + long_pieces[1]):
        best = ours.nbest(word, 5)
        assert 1 < len(best) <= 5
        scores = [s for _, s in best]
        assert scores == sorted(scores, reverse=True)
        assert all("".join(pieces) == word for pieces, _ in best)
        (step,) = ours.encode_steps(word[1:])
        assert best[0][0] == tuple(step.nodes[k].piece for k in step.best)


def test_the_file_is_read_back(pair: tuple[UnigramTokenizer, HFTokenizer], tmp_path: Path) -> None:
    ours, _ = pair
    ours.save_dir(tmp_path)
    assert is_unigram(tmp_path) and is_unigram(tmp_path / "tokenizer.json")
    back = UnigramTokenizer.load(tmp_path)
    assert back.vocab == ours.vocab and back.unk_id == 0 and back.special_tokens == ["<unk>"] and back.digest() == ours.digest()
    doc = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert doc["model"]["type"] == "Unigram" and doc["model"]["unk_id"] == 0 and doc["pre_tokenizer"]["type"] == "Metaspace"
    assert doc["added_tokens"][0]["content"] == "<unk>" and doc["added_tokens"][0]["special"]


def test_decode_names_an_id_that_is_no_token(pair: tuple[UnigramTokenizer, HFTokenizer]) -> None:
    ours, _ = pair
    top = len(ours.vocab) - 1
    with pytest.raises(TokenIdError, match=rf"^token id {top + 1} at index 0 is not in the vocabulary \(0-{top}\)$"):
        ours.decode([top + 1])


def test_decode_follows_a_changed_decoder_and_pickles() -> None:
    tok = UnigramTokenizer([("<unk>", 0.0), ("▁hello", -1.0), ("▁world", -1.0), ("▁", -2.0)])
    assert tok.decode([1, 2]) == "hello world"
    tok.decoder = False
    assert tok.decode([1, 2]) == "▁hello ▁world"
    assert pickle.loads(pickle.dumps(tok)).decode([2, 1]) == "▁world ▁hello"


def _doc() -> dict[str, object]:
    return json.loads(UnigramTokenizer([("<unk>", 0.0), ("▁a", -1.0), ("a", -2.0)]).files()["tokenizer.json"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["model"].update(type="BPE"), "not Unigram"),
        (lambda d: d["model"].update(byte_fallback=True), "byte_fallback"),
        (lambda d: d["model"].update(unk_id=7), "unk_id"),
        (lambda d: d["model"].update(vocab=[["a", "x"]]), "piece 0"),
        (lambda d: d.update(normalizer={"type": "NFKC"}), "normalizer 'NFKC'"),
        (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer must be Metaspace"),
        (lambda d: d["added_tokens"][0].update(id=2), "not its id"),
    ],
)
def test_a_bad_file_is_refused_in_one_line(tmp_path: Path, change, message: str) -> None:
    doc = _doc()
    change(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ModelFileError, match=message) as error:
        read_unigram(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_doc())[:-40], encoding="utf-8")
    assert is_unigram(path)
    with pytest.raises(ModelFileError, match="truncated JSON"):
        UnigramTokenizer.load(path)
