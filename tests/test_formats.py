"""Tokenizer files: round trips through HF tokenizers, GPT-2 files and tiktoken; clear errors."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import BpeError, ModelFileError, OutputError, Tokenizer, Trainer, UnigramTokenizer, WordPieceTokenizer, atomic_write
from engine.formats.byte_unicode import bytes_to_token_string, token_string_to_bytes, token_strings_to_bytes
from engine.train.classic import ClassicModel
from tests.conftest import fixture_file
from tests.test_encode_conformance import gpt2, tiktoken_encoding

SAMPLE = (Path(__file__).resolve().parent.parent / "sample_corpora" / "sample.txt").read_text(encoding="utf-8")
SPECIALS = ["<|endoftext|>", "<|im_start|>"]
CUSTOM = r"\p{L}+|\p{N}|[^\p{L}\p{N}]"

texts = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=10),
        st.sampled_from([" ", "  \n", "'s", "😀", "naïve", *SPECIALS]),
        st.sampled_from(SAMPLE.split(" ")[:100]),
    ),
    max_size=20,
).map("".join)


def trained(pattern: str) -> Tokenizer:
    trainer = Trainer.from_text(SAMPLE + "<|endoftext|>" + SAMPLE.lower(), 500, SPECIALS, pattern=pattern)
    trainer.run()
    return Tokenizer.from_trainer(trainer)


@pytest.fixture(scope="module", params=["gpt2", "gpt4", CUSTOM])
def tok(request) -> Tokenizer:  # noqa: ANN001
    return trained(request.param)


def test_tokenizer_json_round_trip(tok, tmp_path):
    path = tok.save(tmp_path / "tokenizer.json")
    back = Tokenizer.load(path)
    assert back.vocab == tok.vocab and back.merges == tok.merges
    assert back.special_ids == tok.special_ids and back.pattern == tok.pattern and back.direct
    assert back.encode(SAMPLE) == tok.encode(SAMPLE)


def test_save_dir_and_load_either_kind(tok, tmp_path):
    written = tok.save_dir(tmp_path / "model")
    assert sorted(p.name for p in written) == ["merges.txt", "tokenizer.json", "vocab.json"]
    assert Tokenizer.load(tmp_path / "model").encode(SAMPLE) == tok.encode(SAMPLE)
    (tmp_path / "model" / "tokenizer.json").unlink()
    back = Tokenizer.load(tmp_path / "model")
    assert back.special_ids == tok.special_ids and back.vocab == tok.vocab
    if tok.pattern == "gpt2":  # GPT-2 files carry no pattern
        assert back.encode(SAMPLE) == tok.encode(SAMPLE)


def test_a_directory_that_cannot_be_made_is_one_output_error(tok, tmp_path):
    """Saving makes the directory and its parents; where it cannot be made, an ``OutputError``
    in the CLI's one line (an ``OSError`` too), for every kind of model, nothing written."""
    (tmp_path / "a-file").write_text("")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "broken").symlink_to("nowhere")
    cases = [
        (tmp_path / "a-file", "a file, not a directory"),
        (tmp_path / "a-file" / "out", "Not a directory"),
        (tmp_path / "loop", "a symbolic link loop"),
        (tmp_path / "broken", "a broken symbolic link, to nowhere"),
    ]
    if Path("/proc/self").is_dir():  # Linux: no directory can be made in /proc
        cases.append((Path("/proc/nope/out"), "No such file or directory"))
    saves = [
        tok.save_dir,
        tok.save_gpt2_files,
        WordPieceTokenizer(["[UNK]", "a", "##b"]).save_dir,
        UnigramTokenizer([("<unk>", 0.0), ("a", -1.0)]).save_dir,
        ClassicModel(["a", "b", "ab"], [("a", "b")]).save,
    ]
    for save in saves:
        for directory, why in cases:
            with pytest.raises(OutputError, match=f"^{re.escape(f'{directory}: cannot write it ({why})')}$") as caught:
                save(directory)
            assert isinstance(caught.value, BpeError) and isinstance(caught.value, OSError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "broken", "loop"]
    assert [p.name for p in tok.save_dir(tmp_path / "new" / "deeper")] == ["tokenizer.json", "vocab.json", "merges.txt"]


def test_files_are_what_save_dir_writes(tok, tmp_path):
    """A served app hands ``files()`` to the browser: the same bytes a save writes."""
    tok.save_dir(tmp_path)
    assert {name: (tmp_path / name).read_text(encoding="utf-8") for name in tok.files()} == tok.files()
    assert sorted(tok.files()) == ["merges.txt", "tokenizer.json", "vocab.json"]


@settings(max_examples=40)
@given(text=texts)
def test_hf_loads_our_file_and_agrees(tok, tmp_path_factory, text):
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.save(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    ids = tok.encode(text)
    assert hf.encode(text).ids == ids
    assert hf.decode(ids, skip_special_tokens=False) == tok.decode(ids) == text


@settings(max_examples=40)
@given(text=texts)
def test_tiktoken_export(tok, tmp_path_factory, text):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    path = tok.export_tiktoken(tmp_path_factory.mktemp("tt") / "ours.tiktoken")
    enc = tiktoken.Encoding(
        "ours", pat_str=tok.pretokenizer.pattern, mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens=tok.special_ids
    )
    assert enc.encode(text, allowed_special="all") == tok.encode(text)


def test_tiktoken_export_refuses_ids_out_of_merge_order(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)} | {257: b"ab", 256: b"abc"}
    tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")])
    with pytest.raises(ValueError, match="merge order"):
        tok.export_tiktoken(tmp_path / "x.tiktoken")


# -- GPT-2's own files ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_tok() -> Tokenizer:
    return gpt2()


def test_gpt2_files_written_back_unchanged(gpt2_tok, tmp_path):
    gpt2_tok.save_gpt2_files(tmp_path)
    original = json.loads(fixture_file("gpt2_vocab.json").read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8")) == original

    def lines(path: Path) -> list[str]:
        return [m for m in path.read_text(encoding="utf-8").splitlines() if m and not m.startswith("#version")]

    assert lines(tmp_path / "merges.txt") == lines(fixture_file("gpt2_merges.txt"))


def test_gpt2_through_hf_both_ways(gpt2_tok, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    text = fixture_file("tinystories_sample.txt").read_text(encoding="utf-8")
    ours = tokenizers.Tokenizer.from_file(str(gpt2_tok.save(tmp_path / "ours.json")))
    assert ours.encode(text).ids == gpt2_tok.encode(text)

    hf = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(fixture_file("gpt2_vocab.json")), str(fixture_file("gpt2_merges.txt"))))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = tokenizers.decoders.ByteLevel()
    hf.add_special_tokens(["<|endoftext|>"])
    hf.save(str(tmp_path / "hf.json"))
    theirs = Tokenizer.load(tmp_path / "hf.json")
    assert theirs.pattern == "gpt2" and theirs.special_ids == {"<|endoftext|>": 50256}
    assert theirs.encode(text) == hf.encode(text).ids == gpt2_tok.encode(text)


def test_gpt2_tiktoken_export_round_trip(gpt2_tok, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    text = fixture_file("corpus.en").read_text(encoding="utf-8")
    ranks = load_tiktoken_bpe(str(gpt2_tok.export_tiktoken(tmp_path / "gpt2.tiktoken")))
    assert ranks == tiktoken_encoding(gpt2_tok)._mergeable_ranks
    enc = tiktoken.Encoding("gpt2", pat_str=gpt2_tok.pretokenizer.pattern, mergeable_ranks=ranks, special_tokens=gpt2_tok.special_ids)
    assert enc.encode(text, allowed_special="all") == gpt2_tok.encode(text)


# -- atomic writes and clear errors --------------------------------------------------------


def test_interrupted_save_keeps_the_old_file(tmp_path, monkeypatch):
    tok = trained("gpt2")
    path = tok.save(tmp_path / "tokenizer.json")
    before = path.read_bytes()

    def crash(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        Tokenizer(tok.vocab, tok.merges[:10]).save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer.json"]


def test_atomic_write_text(tmp_path):
    assert atomic_write(tmp_path / "a.txt", "héllo").read_text(encoding="utf-8") == "héllo"


@pytest.fixture(scope="module")
def good_json(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("good") / "tokenizer.json"
    trained("gpt2").save(path)
    return path.read_text(encoding="utf-8")


def _edit(good_json: str, edit) -> str:  # noqa: ANN001
    doc = json.loads(good_json)
    edit(doc)
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (lambda g: g[: len(g) // 2], r"truncated JSON at line \d+ column \d+"),
        (lambda g: "{,}", "invalid JSON at line 1 column 2"),
        (lambda g: "[1, 2]", r"not a tokenizer.json \(no 'model' section\)"),
        (lambda g: '{"model_type": "gpt2"}', r"not a tokenizer.json \(no 'model' section\)"),
        (lambda g: _edit(g, lambda d: d["model"].update(type="WordLevel")), "only BPE is supported"),
        (lambda g: _edit(g, lambda d: d["model"].update(type="Unigram")), r"'model.vocab' is not a non-empty list of \[piece, score\]"),
        (lambda g: _edit(g, lambda d: d["model"].update(type="WordPiece")), "'model.unk_token' is missing"),  # read as WordPiece
        (lambda g: _edit(g, lambda d: d["model"].pop("merges")), "'model.merges' is missing"),
        (lambda g: _edit(g, lambda d: d["model"]["merges"].append("x")), r"merge \d+ is not a pair"),
        (lambda g: _edit(g, lambda d: d["model"]["merges"].append("Ġzz qq")), "uses a token not in the vocabulary"),
        (
            lambda g: _edit(g, lambda d: d["model"]["vocab"].update({" ": 9999})),
            "id 9999: token ' ' has ' ', outside GPT-2's byte-level alphabet",
        ),
        (lambda g: _edit(g, lambda d: d["model"]["merges"].insert(3, ["Ġ", 5])), "merge 3: token 5 is not a string"),
        (lambda g: _edit(g, lambda d: d["model"]["vocab"].update({"ĠĠĠ": "7"})), "not a non-negative integer"),
        (lambda g: _edit(g, lambda d: d.update(pre_tokenizer={"type": "Whitespace"})), "not end in ByteLevel"),
        (lambda g: _edit(g, lambda d: d.update(normalizer={"type": "Lowercase"})), "normalizer 'Lowercase' is not supported"),
        (
            lambda g: _edit(g, lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFKC"}]})),
            "normalizer 'NFKC' is not supported",
        ),
        (lambda g: _edit(g, lambda d: d["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Digits"})), "'Digits' is not supported"),
        (
            lambda g: _edit(g, lambda d: d["pre_tokenizer"]["pretokenizers"].append({"type": "ByteLevel"})),
            "ByteLevel is not the last pre_tokenizer",
        ),
        (
            lambda g: _edit(g, lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(behavior="Dropped")),
            "Split behavior 'Dropped' is none of Isolated, Removed",
        ),
        (
            lambda g: _edit(g, lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": "(unclosed"})),
            "the pre_tokenizer's regex does not compile",
        ),
        (lambda g: _edit(g, lambda d: d["model"].update(byte_fallback=True)), "byte_fallback is not supported"),
    ],
)
def test_bad_tokenizer_json(tmp_path, good_json, content, message):
    path = tmp_path / "tokenizer.json"
    path.write_text(content(good_json), encoding="utf-8")
    with pytest.raises(ModelFileError, match=message) as err:
        Tokenizer.load(path)
    assert str(err.value).startswith(f"{path}: ")


def test_missing_and_wrong_kind_paths(tmp_path):
    with pytest.raises(ModelFileError, match="no such file or directory"):
        Tokenizer.load(tmp_path / "nope.json")
    with pytest.raises(ModelFileError, match="holds neither tokenizer.json nor vocab.json"):
        Tokenizer.load(tmp_path)
    (tmp_path / "vocab.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ModelFileError, match="holds vocab.json but not merges.txt, the other half of GPT-2's files"):
        Tokenizer.load(tmp_path)
    (tmp_path / "vocab.json").rename(tmp_path / "merges.txt")
    with pytest.raises(ModelFileError, match="holds merges.txt but not vocab.json, the other half of GPT-2's files"):
        Tokenizer.load(tmp_path)
    (tmp_path / "merges.txt").unlink()
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(ModelFileError, match="not UTF-8"):
        Tokenizer.load(tmp_path / "bin.json")


def test_bad_gpt2_files(tmp_path):
    vocab = {chr(c): i for i, c in enumerate(range(33, 127))}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\nno\n", encoding="utf-8")
    with pytest.raises(ModelFileError, match=r"merges.txt: line 3 is not two tokens"):
        Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n\nc d\ne\tf g\n", encoding="utf-8")
    with pytest.raises(ModelFileError, match=r"merges.txt: line 5: token 'e\\tf' has '\\t', outside GPT-2's byte-level alphabet"):
        Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    (tmp_path / "merges.txt").write_text("a b\n", encoding="utf-8")
    with pytest.raises(ModelFileError, match=r"vocab.json: vocabulary lacks the single byte"):
        Tokenizer.load(tmp_path)


@given(st.lists(st.binary(max_size=6), max_size=20))
def test_token_strings_convert_at_once_as_one_by_one(tokens):
    """GPT-2's stand-ins, converted all at once (as model files are read) or one by one."""
    texts = [bytes_to_token_string(t) for t in tokens]
    assert [len(text) for text in texts] == [len(t) for t in tokens]
    assert token_strings_to_bytes(texts) == [token_string_to_bytes(text) for text in texts] == tokens
