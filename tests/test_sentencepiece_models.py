"""SentencePiece's own ``.model`` files through ``Tokenizer.load``: models trained here with
``sentencepiece`` (Unigram and BPE, ``byte_fallback``, user-defined and control symbols)
encode to exactly its ids on random texts, decode as it does, and open in ``encode``,
``decode`` and ``compare``; corrupt and truncated files, and a missing package, are one line."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import ModelFileError, TokenIdError, Tokenizer
from engine.compare.comparison import load_span_tokenizer
from engine.encode.sentencepiece_model import BYTE, CONTROL, UNKNOWN, USER_DEFINED, SentencePieceModel
from engine.encode.sentencepiece_steps import SentencePieceLattices, SentencePieceMerges
from tests.conftest import CLI_ENV, ROOT, fixture_file, refused, run_cli
from tests.test_encode_fast import unflattened

spm = pytest.importorskip("sentencepiece")

USER = ["<sep>", "foo", "你好"]
CONTROL_SYMBOLS = ["<ctl>", "<mask>"]
MODELS = {
    # name: (corpus, settings)
    "unigram": ("corpus.en", {"model_type": "unigram", "vocab_size": 500}),
    "bpe": ("corpus.en", {"model_type": "bpe", "vocab_size": 500}),
    "unigram-bytes": ("corpus.en", {"model_type": "unigram", "vocab_size": 600, "byte_fallback": True}),
    "bpe-bytes": ("zh-xiyouji-9k.txt", {"model_type": "bpe", "vocab_size": 1200, "byte_fallback": True, "character_coverage": 0.995}),
    "unigram-symbols": (
        "corpus.en",
        {"model_type": "unigram", "vocab_size": 500, "user_defined_symbols": USER, "control_symbols": CONTROL_SYMBOLS},
    ),
    "bpe-symbols-bytes-identity": (
        "german.txt",
        {
            "model_type": "bpe",
            "vocab_size": 330,
            "byte_fallback": True,
            "user_defined_symbols": USER,
            "control_symbols": CONTROL_SYMBOLS,
            "normalization_rule_name": "identity",
            "remove_extra_whitespaces": False,
        },
    ),
    "unigram-zh": ("zh-xiyouji-9k.txt", {"model_type": "unigram", "vocab_size": 800, "character_coverage": 0.995}),
}
PARTS = ["the", " cat", "  ", " ", "\n", "\t", "▁", "ｆｕｌｌ", "é", "e\u0301", "🌍", "孙悟空", "ing", "<unk>", "<s>"]
TEXTS = st.text(st.characters(codec="utf-8"), max_size=50) | st.lists(st.sampled_from([*USER, *CONTROL_SYMBOLS, *PARTS]), max_size=16).map(
    "".join
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each model of ``MODELS`` trained by ``sentencepiece`` into ``NAME.model``."""
    directory = tmp_path_factory.mktemp("spm")
    paths = {}
    for name, (corpus, options) in MODELS.items():
        spm.SentencePieceTrainer.train(input=str(fixture_file(corpus)), model_prefix=str(directory / name), minloglevel=2, **options)
        paths[name] = directory / f"{name}.model"
    return paths


@pytest.fixture(scope="module")
def processors(models: dict[str, Path]) -> dict[str, object]:
    return {name: spm.SentencePieceProcessor(model_file=str(path)) for name, path in models.items()}


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
@pytest.mark.parametrize("name", list(MODELS))
def test_ids_and_text_are_sentencepieces(models, processors, name, text):
    model = Tokenizer.load(models[name])
    theirs = processors[name]
    assert isinstance(model, SentencePieceModel)
    ids = model.encode(text)
    assert ids == theirs.encode(text)
    assert model.decode(ids) == theirs.decode(ids)
    assert model.encode_batch([text, text[::-1]]) == [ids, theirs.encode(text[::-1])]
    assert unflattened(model.encode_batch_flat([text, text[::-1]])) == [ids, theirs.encode(text[::-1])]
    spans = model.encode_spans(text)
    assert [s.id for s in spans] == ids
    at = 0
    for span in spans:  # in order, inside the text, never overlapping
        assert at <= span.start <= span.end <= len(text.encode("utf-8"))
        at = span.end


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
@pytest.mark.parametrize("name", list(MODELS))
def test_the_steps_the_views_walk_give_sentencepieces_ids(models, processors, name, text):
    """A Unigram model's lattices (their best paths) and a BPE model's merge rounds, word by
    word, end on sentencepiece's ids; each round merges the lowest rank, leftmost."""
    model = Tokenizer.load(models[name])
    assert isinstance(model, SentencePieceModel)
    normalized = model.normalize(text)
    if name.startswith("unigram"):
        lattices = SentencePieceLattices(model).encode_steps(text)
        assert "".join(lattice.word for lattice in lattices) == normalized
        for lattice in lattices:
            assert "".join(lattice.nodes[k].piece for k in lattice.best) == lattice.word
        assert [i for lattice in lattices for i in lattice.ids] == processors[name].encode(text)
        return
    traces = SentencePieceMerges(model).encode_steps(text)
    assert "".join(trace.text for trace in traces) == normalized
    for trace in traces:
        for step in trace.steps:
            ranked = [r for r in step.ranks if r is not None]
            assert (step.chosen is None) == (not ranked)
            if step.chosen is not None:
                assert step.ranks[step.chosen] == min(ranked) and step.ranks.index(min(ranked)) == step.chosen
    assert [i for trace in traces for i in trace.ids] == processors[name].encode(text)


@pytest.mark.parametrize("name", list(MODELS))
def test_the_pieces_kinds_and_special_tokens(models, processors, name):
    model = Tokenizer.load(models[name])
    theirs = processors[name]
    assert isinstance(model, SentencePieceModel)
    assert model.kind == ("BPE" if name.startswith("bpe") else "Unigram")
    assert model.vocab == [theirs.id_to_piece(i) for i in range(theirs.get_piece_size())]
    assert model.unk_id == theirs.unk_id()
    for i, kind in enumerate(model.types):
        assert (kind == CONTROL, kind == UNKNOWN, kind == BYTE) == (theirs.is_control(i), theirs.is_unknown(i), theirs.is_byte(i))
        assert model.scores[i] == pytest.approx(theirs.get_score(i))
    expected = ["<unk>", "<s>", "</s>"]
    if "symbols" in name:
        expected += [*CONTROL_SYMBOLS, *USER]
        assert [model.types[model.special_ids[s]] for s in USER] == [USER_DEFINED] * len(USER)
    assert model.special_tokens == expected
    assert model.byte_fallback == ("bytes" in name)


def test_user_defined_symbols_are_whole_and_bytes_one_byte_each(models):
    model = Tokenizer.load(models["bpe-symbols-bytes-identity"])
    assert isinstance(model, SentencePieceModel)
    text = "a<sep>b 你好 \U0001f30d"
    ids = model.encode(text)
    assert model.special_ids["<sep>"] in ids and model.special_ids["你好"] in ids
    emoji = [s for s in model.encode_spans(text) if model.types[s.id] == BYTE]
    assert [(s.end - s.start) for s in emoji] == [1, 1, 1, 1] and emoji[-1].end == len(text.encode())
    assert model.decode(ids) == text


def test_a_directory_holding_one_model_opens(models, tmp_path):
    (tmp_path / "spiece.model").write_bytes(models["unigram"].read_bytes())
    assert isinstance(Tokenizer.load(tmp_path), SentencePieceModel)


def test_decode_refuses_an_id_past_the_vocabulary(models):
    model = Tokenizer.load(models["unigram"])
    with pytest.raises(TokenIdError, match=r"^token id 500 at index 1 is not in the vocabulary \(0-499\)$"):
        model.decode([5, 500])
    assert pickle.loads(pickle.dumps(model)).decode([5, 6]) == model.decode([5, 6])


# -- the commands -------------------------------------------------------------------------


def test_encode_decode_and_compare_open_a_model(models, processors):
    path, theirs = models["unigram-symbols"], processors["unigram-symbols"]
    text = "Hello  wörld <sep> 你好 foo<ctl>"
    done = run_cli("encode", "--model", str(path), "--headless", "--json", "--text", text)
    assert done.returncode == 0, done.stderr
    tokens = json.loads(done.stdout)
    assert [t["id"] for t in tokens] == theirs.encode(text)
    assert [t["text"] for t in tokens] == [theirs.id_to_piece(t["id"]) for t in tokens]  # <unk> as the vocabulary has it
    printed = run_cli("encode", "--model", str(path), "--headless", "--text", text)
    assert printed.returncode == 0 and "<sep>" in printed.stdout and "tokens ·" in printed.stdout
    ids = [str(t["id"]) for t in tokens]
    decoded = run_cli("decode", "--model", str(path), *ids)
    assert decoded.returncode == 0 and decoded.stdout == theirs.decode([int(i) for i in ids])
    compared = run_cli("compare", "--json", "--text", text, "--model", str(path), "--model", str(models["bpe-bytes"]))
    assert compared.returncode == 0, compared.stderr
    *_, unigram, bpe = json.loads(compared.stdout)["rows"]
    assert (unigram["name"], unigram["kind"], bpe["kind"]) == ("unigram-symbols.model", "Unigram", "BPE")
    assert [s["id"] for s in unigram["spans"]] == theirs.encode(text)
    row = load_span_tokenizer(path)
    assert [t.piece.decode() for t in row.tokenize(text) if t.special] == ["<sep>", "你好", "foo"]


def test_the_compare_row_marks_unknown_pieces(models):
    row = load_span_tokenizer(models["unigram"])
    tokens = row.tokenize("a 孙 b")
    assert [t.unknown for t in tokens].count(True) == 1 and row.kind == "Unigram"


def test_encode_out_says_what_it_takes(models, tmp_path):
    (tmp_path / "x.txt").write_text("the cat\n")
    model = str(models["bpe"])
    refused(run_cli("encode", "--model", model, "--file", "x.txt", "--out", "ids.bin", cwd=tmp_path), "is a SentencePiece BPE model")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (lambda good: good[: len(good) // 2], "not a SentencePiece model"),
        (lambda good: good[:-7], "not a SentencePiece model"),
        (lambda good: b"\x0a\xff\xff\xff\xff\x0f" + good, "not a SentencePiece model"),
        (lambda good: b"", "not a SentencePiece model"),
        (lambda good: b'{"model": {"type": "BPE"}}', "not a SentencePiece model"),
    ],
)
@pytest.mark.parametrize("command", ["encode", "decode", "compare"])
def test_corrupt_or_truncated_models_are_one_line(models, tmp_path, content, expected, command):
    path = tmp_path / "bad.model"
    path.write_bytes(content(models["unigram"].read_bytes()))
    given = {"encode": ["--headless", "--text", "x"], "decode": ["1"], "compare": ["--headless", "--text", "x"]}[command]
    refused(run_cli(command, "--model", str(path), *given, cwd=tmp_path), str(path), expected)
    with pytest.raises(ModelFileError, match=expected):
        Tokenizer.load(path)


def test_a_missing_model_is_one_line(tmp_path):
    refused(run_cli("encode", "--model", "nowhere.model", "--headless", "--text", "x", cwd=tmp_path), "nowhere.model: no such file")


def test_without_the_package_a_model_is_one_line_and_everything_else_works(models, tmp_path):
    """A ``sentencepiece`` that cannot be imported stands in for the missing extra."""
    (tmp_path / "sentencepiece.py").write_text("raise ImportError('not installed')\n")
    env = {**CLI_ENV, "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    for command, rest in (("encode", ["--headless", "--text", "x"]), ("compare", ["--headless", "--text", "x"]), ("decode", ["1"])):
        done = subprocess.run(
            [sys.executable, "-m", "bpe_tui.cli", command, "--model", str(models["unigram"]), *rest],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )  # fmt: skip
        refused(done, "a SentencePiece model opens through the sentencepiece package: pip install 'bpe-tui[sentencepiece]'")
    command = [sys.executable, "-m", "bpe_tui.cli", "compare", "--json", "--text", "the cat"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
