"""WordPiece files (``engine.formats.wordpiece_files``): our ``tokenizer.json`` and
``vocab.txt`` open in Hugging Face ``tokenizers`` with the same ids, theirs open in ours,
corrupt ones are one line; ``Tokenizer.load`` and the commands take a WordPiece model; BERT's
word splitting equals ``BertPreTokenizer`` on every code point."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from engine import ModelFileError, ResumeError, SettingsError, Tokenizer, Trainer
from engine.compare.comparison import BpeSpans, WordPieceSpans, load_span_tokenizer
from engine.corpus.gen_hf_unicode import TABLE, lowercase_map, punctuation_ranges, table_text
from engine.corpus.hf_unicode import LOWERCASE, PUNCTUATION_RANGES
from engine.corpus.words import bert_words
from engine.encode.wordpiece import WordPieceTokenizer
from engine.formats.wordpiece_files import BERT_SPECIAL_TOKENS, read_vocab_txt, read_wordpiece
from engine.train.settings import TrainOptions
from tests.conftest import refused, run_cli
from tests.test_wordpiece_encode import ENGLISH, hf_trained, texts

tokenizers = pytest.importorskip("tokenizers")

SPECIALS = list(BERT_SPECIAL_TOKENS)


@pytest.fixture(scope="module")
def hf_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WordPiece ``tokenizer.json`` trained and written by HF (no normalizer)."""
    return hf_trained(tmp_path_factory.mktemp("hf"), None)


@pytest.fixture(scope="module", params=[False, True], ids=["cased", "lowercase"])
def ours(request: pytest.FixtureRequest, hf_path: Path) -> WordPieceTokenizer:
    """Our tokenizer, made from a vocabulary (HF's, in id order), not from a file."""
    table = json.loads(hf_path.read_text(encoding="utf-8"))["model"]["vocab"]
    vocab = sorted(table, key=table.__getitem__)
    return WordPieceTokenizer(vocab, SPECIALS, lowercase=request.param)


@pytest.fixture(scope="module")
def saved(ours: WordPieceTokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("saved")
    written = ours.save_dir(directory)
    assert [p.name for p in written] == ["tokenizer.json", "vocab.txt"]
    return directory


# -- our files in HF ------------------------------------------------------------------------


def test_our_tokenizer_json_as_specified(ours, saved):
    doc = json.loads((saved / "tokenizer.json").read_text(encoding="utf-8"))
    assert doc["model"] | {"vocab": None} == {
        "type": "WordPiece",
        "unk_token": "[UNK]",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": 100,
        "vocab": None,
    }
    assert doc["model"]["vocab"] == {token: i for i, token in enumerate(ours.vocab)}
    assert doc["pre_tokenizer"] == {"type": "BertPreTokenizer"}
    assert doc["decoder"] == {"type": "WordPiece", "prefix": "##", "cleanup": True}
    assert doc["normalizer"] == ({"type": "Lowercase"} if ours.lowercase else None)
    assert (doc["version"], doc["post_processor"], doc["truncation"], doc["padding"]) == ("1.0", None, None, None)
    assert [(a["content"], a["id"], a["special"], a["normalized"]) for a in doc["added_tokens"]] == [
        (s, ours.vocab.index(s), True, False) for s in SPECIALS
    ]
    assert (saved / "vocab.txt").read_text(encoding="utf-8").splitlines() == ours.vocab


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts)
def test_our_files_give_hf_our_ids(ours, saved, text):
    hf = _hf(saved / "tokenizer.json")
    ids = ours.encode(text)
    assert hf.encode(text, add_special_tokens=False).ids == ids
    assert hf.decode(ids, skip_special_tokens=False) == ours.decode(ids)


def test_our_vocab_txt_in_hf(ours, saved):
    """BERT's way to open a ``vocab.txt``: ``WordPiece.from_file`` behind BERT's pre-tokenizer."""
    hf = tokenizers.Tokenizer(tokenizers.models.WordPiece.from_file(str(saved / "vocab.txt"), unk_token="[UNK]"))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    hf.add_special_tokens(SPECIALS)
    from_txt = WordPieceTokenizer.load(saved / "vocab.txt")
    assert from_txt.vocab == ours.vocab and from_txt.special_tokens == SPECIALS and not from_txt.lowercase
    text = ENGLISH[:20_000] + " [CLS] unheard-of 你好 😀"
    assert from_txt.encode(text) == hf.encode(text, add_special_tokens=False).ids


_HF: dict[Path, object] = {}


def _hf(path: Path):  # noqa: ANN202
    if path not in _HF:
        _HF[path] = tokenizers.Tokenizer.from_file(str(path))
    return _HF[path]


# -- HF's files in ours ---------------------------------------------------------------------


def test_round_trip_through_our_files(ours, saved):
    for path in (saved, saved / "tokenizer.json"):
        again = WordPieceTokenizer.load(path)
        assert (again.vocab, again.added_tokens, again.lowercase) == (ours.vocab, ours.added_tokens, ours.lowercase)
        assert again.digest() == ours.digest()
        assert again.files() == ours.files()
    (saved / "tokenizer.json").rename(saved / "kept.json")
    try:
        from_txt = WordPieceTokenizer.load(saved)  # a directory with only vocab.txt
        assert from_txt.vocab == ours.vocab and not from_txt.lowercase
    finally:
        (saved / "kept.json").rename(saved / "tokenizer.json")
    assert read_vocab_txt(saved / "vocab.txt", lowercase=True).lowercase


def test_hf_added_tokens_outside_the_vocabulary(tmp_path):
    doc = json.loads(WordPieceTokenizer(["[UNK]", "a", "##b"], ["[UNK]"]).files()["tokenizer.json"])
    added = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    doc["added_tokens"] = [
        {"id": 9, "content": "<x>", **added},
        {"id": 0, "content": "[UNK]", **added},
        {"id": 7, "content": "<y>", **added},
    ]
    doc["added_tokens"].append({"id": 4, "content": "<z>", **added, "lstrip": True, "rstrip": True, "special": False})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    ours = WordPieceTokenizer.load(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert ours.special_ids == {"<x>": 3, "[UNK]": 0, "<y>": 4, "<z>": 5} == {t: hf.token_to_id(t) for t in ours.special_ids}
    text = "ab<x>a  <z>  <y>b[UNK]c"
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids
    assert ours.decode(ours.encode(text)) == hf.decode(ours.encode(text), skip_special_tokens=False)


def test_a_bert_like_file(tmp_path):
    """BERT's recipe with the normalizer's options we reproduce; its decoder absent."""
    path = hf_trained(tmp_path, tokenizers.normalizers.BertNormalizer(clean_text=False, strip_accents=False, lowercase=True))
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["decoder"] = None
    doc["post_processor"] = {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}  # not read: it wraps batches
    path.write_text(json.dumps(doc), encoding="utf-8")
    ours = WordPieceTokenizer.load(path)
    assert ours.lowercase and ours.handle_chinese_chars and ours.decoder is None
    hf = tokenizers.Tokenizer.from_file(str(path))
    text = "The QUICK fox 西游记 [MASK] jumps, naïvely!"
    ids = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text) == ids
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False)


# -- corrupt and unsupported files ----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b"[UNK]\n\xff\xfe\n", r"not UTF-8 text \(byte 6\)"),
        (b"[UNK]\na\n##b\na\n", "line 4 repeats token 'a' of line 2"),
        (b"[UNK]\na\n\n##b\n", "line 3 is blank"),
        (b"[UNK]\na\n  \n", "line 3 is blank"),
        (b"[PAD]\na\n##b\n", r"no \[UNK\] token"),
    ],
)
def test_corrupt_vocab_txt(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match=message) as err:
        Tokenizer.load(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)
    refused(run_cli("encode", "--model", str(path), "--headless", "--text", "x"), str(path), message.replace("\\", ""))


def test_vocab_txt_lines_as_hf_reads_them(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\r\na \t\n##b\n")  # trailing whitespace is not part of a token
    assert read_vocab_txt(path).vocab == ["[UNK]", "a", "##b"]
    with pytest.raises(ValueError, match="cannot be a line of vocab.txt"):
        WordPieceTokenizer(["[UNK]", "a "]).files()


def _edit(good: str, edit) -> str:  # noqa: ANN001
    doc = json.loads(good)
    edit(doc)
    return json.dumps(doc)


GOOD = WordPieceTokenizer(["[PAD]", "[UNK]", "a", "##b"], ["[PAD]", "[UNK]"]).files()["tokenizer.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (lambda g: g[: len(g) // 2], r"truncated JSON at line \d+ column \d+"),
        (lambda g: g.replace('"type": "WordPiece",', '"type": "WordPiece",,', 1), "invalid JSON"),
        (lambda g: _edit(g, lambda d: d.pop("model") and d.update(models={"type": "WordPiece"})), "no 'model' section"),
        (lambda g: _edit(g, lambda d: d["model"].update(vocab="nonsense")), "'model.vocab' is not a non-empty"),
        (lambda g: _edit(g, lambda d: d["model"]["vocab"].update(c=7)), "token 'c' has id 7, beyond the 5 tokens"),
        (lambda g: _edit(g, lambda d: d["model"]["vocab"].update(c=2)), r"id 2 is used twice \('a' and 'c'\)"),
        (lambda g: _edit(g, lambda d: d["model"]["vocab"].update(c=-1)), "has id -1, not a non-negative integer"),
        (lambda g: _edit(g, lambda d: d["model"].pop("unk_token")), "'model.unk_token' is missing"),
        (lambda g: _edit(g, lambda d: d["model"].update(unk_token="<unk>")), "the unk_token '<unk>' is not in the vocabulary"),
        (lambda g: _edit(g, lambda d: d["model"].update(max_input_chars_per_word="100")), "not an integer"),
        (lambda g: _edit(g, lambda d: d["model"].update(max_input_chars_per_word=-1)), "is -1, below 0"),
        (lambda g: _edit(g, lambda d: d["model"].update(continuing_subword_prefix=None)), "'model.continuing_subword_prefix'"),
        (lambda g: _edit(g, lambda d: d.update(normalizer={"type": "NFKC"})), r"normalizer 'NFKC' is not supported \(Lowercase"),
        (lambda g: _edit(g, lambda d: d.update(normalizer=_bert(clean_text=True))), "clean_text: true is not supported"),
        (lambda g: _edit(g, lambda d: d.update(normalizer=_bert(strip_accents=None))), "strip_accents is not supported"),
        (lambda g: _edit(g, lambda d: d.update(normalizer=_bert(strip_accents=True, lowercase=False))), "strip_accents is not supported"),
        (lambda g: _edit(g, lambda d: d.update(normalizer=_bert(lowercase="yes"))), "options must be true or false"),
        (lambda g: _edit(g, lambda d: d.update(pre_tokenizer={"type": "Whitespace"})), "pre_tokenizer 'Whitespace' is not supported"),
        (lambda g: _edit(g, lambda d: d.update(pre_tokenizer=None)), "pre_tokenizer none is not supported"),
        (lambda g: _edit(g, lambda d: d.update(decoder={"type": "ByteLevel"})), "decoder 'ByteLevel' is not supported"),
        (lambda g: _edit(g, lambda d: d.update(added_tokens=[{"id": "1"}])), "'added_tokens' must be a list"),
        (
            lambda g: _edit(g, lambda d: (d.update(normalizer={"type": "Lowercase"}), d["added_tokens"][0].update(normalized=True))),
            r"added token '\[PAD\]' is matched on normalized text",
        ),
    ],
)
def test_corrupt_or_unsupported_tokenizer_json(tmp_path, content, message):
    path = tmp_path / "tokenizer.json"
    path.write_text(content(GOOD), encoding="utf-8")
    with pytest.raises(ModelFileError, match=message) as err:
        read_wordpiece(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def _bert(**options: object) -> dict[str, object]:
    return {
        "type": "BertNormalizer",
        "clean_text": False,
        "handle_chinese_chars": True,
        "strip_accents": False,
        "lowercase": True,
    } | options


def test_good_is_good(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(GOOD, encoding="utf-8")
    assert read_wordpiece(path).vocab == ["[PAD]", "[UNK]", "a", "##b"]
    assert tokenizers.Tokenizer.from_file(str(path)).encode("ab x").ids == WordPieceTokenizer.load(path).encode("ab x") == [2, 3, 1]


# -- opening a WordPiece model everywhere a model is opened -------------------------------


def test_tokenizer_load_opens_wordpiece(saved, hf_path, tmp_path):
    for path in (saved, saved / "tokenizer.json", saved / "vocab.txt", hf_path):
        assert isinstance(Tokenizer.load(path), WordPieceTokenizer)
    only_txt = tmp_path / "bert"
    only_txt.mkdir()
    (only_txt / "vocab.txt").write_bytes((saved / "vocab.txt").read_bytes())
    assert isinstance(Tokenizer.load(only_txt), WordPieceTokenizer)
    assert isinstance(Tokenizer.load(only_txt / "vocab.txt"), WordPieceTokenizer)
    trainer = Trainer.from_text("low lower lowest " * 20, 270)
    trainer.run()
    bpe = tmp_path / "bpe"
    Tokenizer.from_trainer(trainer).save_dir(bpe)
    (bpe / "vocab.txt").write_bytes((saved / "vocab.txt").read_bytes())  # beside BPE files, not read
    assert isinstance(Tokenizer.load(bpe), Tokenizer)
    with pytest.raises(SettingsError, match="a pattern goes with a .tiktoken rank file"):
        Tokenizer.load(saved, "gpt2")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFileError, match="holds neither tokenizer.json nor vocab.json"):
        Tokenizer.load(tmp_path / "empty")
    with pytest.raises(ModelFileError, match="no such file or directory"):
        Tokenizer.load(tmp_path / "nowhere" / "vocab.txt")
    with pytest.raises(ResumeError, match="a WordPiece model: --resume continues byte-level BPE"):
        TrainOptions(300, ("<|endoftext|>",)).saved_merges(str(saved))


def test_compare_row(saved, hf_path):
    row = load_span_tokenizer(saved)
    assert isinstance(row, WordPieceSpans) and (row.kind, row.name, row.vocab_size) == ("WordPiece", saved.name, len(row.tokenizer.vocab))
    text = "Un-heard-of [CLS] ΣΑΣ 你好 😀\u3000cats!"
    tokens = row.tokenize(text)
    hf = tokenizers.Tokenizer.from_file(str(saved / "tokenizer.json")).encode(text, add_special_tokens=False)
    assert [t.id for t in tokens] == hf.ids
    assert [t.piece.decode() for t in tokens] == hf.tokens
    at = [len(text[:k].encode()) for k in range(len(text) + 1)]
    assert [(t.start, t.end) for t in tokens] == [(at[a], at[b]) for a, b in hf.offsets]
    assert [t.special for t in tokens] == [t.piece == b"[CLS]" for t in tokens]
    assert any(t.unknown for t in tokens) and all(t.id == 1 for t in tokens if t.unknown)
    assert isinstance(load_span_tokenizer(hf_path), WordPieceSpans)


def test_a_file_we_cannot_reproduce_compares_through_hf(tmp_path):
    path = hf_trained(tmp_path, tokenizers.normalizers.BertNormalizer(lowercase=True))  # clean_text, strip_accents
    row = load_span_tokenizer(path)
    assert not isinstance(row, (WordPieceSpans, BpeSpans)) and row.kind == "WordPiece"
    with pytest.raises(ModelFileError, match="clean_text: true is not supported"):
        Tokenizer.load(path)


# -- the commands ---------------------------------------------------------------------------


def test_decode_command(ours, saved):
    ids = ours.encode("The cat's whiskers, unheard-of!")
    done = run_cli("decode", "--model", str(saved), *map(str, ids))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ours.decode(ids) == _hf(saved / "tokenizer.json").decode(ids, skip_special_tokens=False)
    done = run_cli("decode", "--model", str(saved), "5", "6", "7")
    assert done.returncode == 0 and done.stdout == ours.decode([5, 6, 7])
    refused(run_cli("decode", "--model", str(saved), "5", "99999"), "token id 99999 at index 1 is not in the vocabulary")


def test_encode_command(ours, saved):
    text = "The cat [MASK] sat. 你好 ΩΩ"
    ids = ours.encode(text)
    done = run_cli("encode", "--model", str(saved), "--text", text, "--json")
    assert done.returncode == 0, done.stderr
    tokens = json.loads(done.stdout)
    assert [t["id"] for t in tokens] == ids
    assert [t["text"] for t in tokens] == [ours.token(i) for i in ids]
    assert [bytes(t["bytes"]).decode() for t in tokens] == [t["text"] for t in tokens]
    done = run_cli("encode", "--model", str(saved / "vocab.txt"), "--text", text, "--headless")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    id_lines = [line for line in lines[:-2] if line.split() and all(n.isdigit() for n in line.split())]
    assert [int(n) for line in id_lines for n in line.split()] == WordPieceTokenizer.load(saved / "vocab.txt").encode(text)
    assert "[MASK]" in done.stdout and f"{len(ids)} tokens" in lines[-2]
    refused(run_cli("encode", "--model", str(saved), "--file", "x.txt", "--out", "ids.bin"), "is a WordPiece model")


def test_compare_command(saved):
    done = run_cli("compare", "--model", str(saved), "--text", "Unheard-of cats, 你好!", "--headless")
    assert done.returncode == 0, done.stderr
    assert saved.name in done.stdout and "WordPiece" in done.stdout
    done = run_cli("compare", "--model", str(saved), "--text", "Unheard-of cats, 你好!", "--json")
    row = json.loads(done.stdout)["rows"][-1]
    assert (row["name"], row["kind"], row["vocab_size"]) == (saved.name, "WordPiece", len(Tokenizer.load(saved).vocab))
    assert any(s["token"].startswith("##") for s in row["spans"])


# -- BERT's words ---------------------------------------------------------------------------


def test_committed_tables_are_tokenizers_own():
    ranges, lowered = punctuation_ranges(), lowercase_map()
    assert TABLE.read_text(encoding="utf-8") == table_text(ranges, lowered)
    assert list(PUNCTUATION_RANGES) == ranges and list(LOWERCASE) == lowered


def test_bert_words_equal_bert_pre_tokenizer_on_every_code_point():
    split = tokenizers.pre_tokenizers.BertPreTokenizer().pre_tokenize_str
    words = bert_words().findall
    differ = [
        f"U+{c:04X}"
        for c in range(sys.maxunicode + 1)
        if not 0xD800 <= c <= 0xDFFF and words(text := f"a{chr(c)}b") != [w for w, _ in split(text)]
    ]
    assert not differ, differ[:10]
