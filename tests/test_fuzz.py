"""Random and damaged input: the file readers and loaders raise only their documented errors.

Corpus reading raises ``CorpusError``, model loading ``ModelFileError``, and the command
exits 0 or 2; anything else (a traceback) fails these tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe_tui.cli import main
from engine import CorpusError, ModelFileError, PreTokenizer, Tokenizer, Trainer
from engine.corpus.counting import count_file

SPECIAL = "<|endoftext|>"
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

corpus_bytes = st.lists(
    st.one_of(
        st.binary(max_size=4),
        st.text(max_size=6).map(str.encode),
        st.sampled_from([SPECIAL.encode(), b" ", b"\n", "é".encode(), "😀".encode()[:2], b"\xff"]),
    ),
    max_size=40,
).map(b"".join)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 1 << 70) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    trainer = Trainer.from_text("the cat sat on the mat; the hat! 12 34 " * 30 + "日本語", 300, [SPECIAL])
    trainer.run()
    directory = tmp_path_factory.mktemp("model")
    Tokenizer.from_trainer(trainer).save_dir(directory)
    return directory


def load_or_model_error(path: Path) -> Tokenizer | None:
    """Load ``path``; None when it is refused with ``ModelFileError`` naming it."""
    try:
        tokenizer = Tokenizer.load(path)
    except ModelFileError as e:
        assert str(e).startswith(str(path.parent)), e
        return None
    text = "the cat, 日本語 " + SPECIAL  # what loads must also work, whatever its regex
    assert tokenizer.decode(tokenizer.encode(text)) == text
    return tokenizer


# -- corpus reading -------------------------------------------------------------------------


@FUZZ
@given(data=corpus_bytes, block=st.integers(1, 16))
def test_corpus_bytes_count_or_say_where_utf8_breaks(tmp_path, data, block):
    """Strict reading fails exactly where a whole-file decode fails; replace never fails."""
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    pretok = PreTokenizer("gpt2", [SPECIAL])
    try:
        expected = pretok.count(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        with pytest.raises(CorpusError, match=f"not valid UTF-8 at byte offset {e.start} "):
            count_file(path, pretok, workers=1, block_size=block)
    else:
        assert count_file(path, pretok, workers=1, block_size=block) == expected
    replaced = pretok.count(data.decode("utf-8", errors="replace"))
    assert count_file(path, pretok, workers=1, block_size=block, errors="replace") == replaced


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=corpus_bytes, errors=st.sampled_from(["strict", "replace"]))
def test_train_command_on_random_bytes(tmp_path, capsys, data, errors):
    path = tmp_path / "corpus.txt"
    path.write_bytes(data)
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    code = main(["train", str(path), "--headless", "--vocab-size", "270", "--workers", "1", "--errors", errors, "--out", str(out)])
    assert code in (0, 2)
    err = capsys.readouterr().err
    if code == 2:
        assert err.strip().splitlines()[-1].startswith(f"bpe-tui: {path}: ")
        assert not out.exists()
    else:
        assert load_or_model_error(out / "tokenizer.json") is not None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=corpus_bytes)
def test_encode_command_on_random_bytes(tmp_path, capsys, model_dir, data):
    path = tmp_path / "input.txt"
    path.write_bytes(data)
    code = main(["encode", "--model", str(model_dir), "--file", str(path), "--json"])
    out, err = capsys.readouterr()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        assert code == 2 and "not UTF-8" in err and out == ""
    else:
        assert code == 0 and Tokenizer.load(model_dir).decode([t["id"] for t in json.loads(out)]) == text


# -- model files ------------------------------------------------------------------------------


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes_as_model_files(tmp_path, model_dir, data):
    (tmp_path / "tokenizer.json").write_bytes(data)
    assert load_or_model_error(tmp_path / "tokenizer.json") is None
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir(exist_ok=True)
    (gpt2 / "vocab.json").write_bytes((model_dir / "vocab.json").read_bytes())
    (gpt2 / "merges.txt").write_bytes(data)
    load_or_model_error(gpt2 / "merges.txt")  # a directory with vocab.json + merges.txt
    load_or_model_error(gpt2)


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.json", "merges.txt"])
@FUZZ
@given(cut=st.floats(0, 1))
def test_truncated_model_files(tmp_path, model_dir, name, cut):
    """Any prefix of a saved file: refused, or (cut in the trailing newline) loaded."""
    for file in model_dir.iterdir():
        data = file.read_bytes()
        (tmp_path / file.name).write_bytes(data[: int(len(data) * cut)] if file.name == name else data)
    if load_or_model_error(tmp_path / "tokenizer.json" if name == "tokenizer.json" else tmp_path / "merges.txt") is None:
        return
    (tmp_path / "tokenizer.json").unlink()
    load_or_model_error(tmp_path)


PLACES = [
    (),
    ("model",),
    ("model", "type"),
    ("model", "vocab"),
    ("model", "merges"),
    ("model", "merges", 0),
    ("model", "vocab", "Ġt"),
    ("model", "ignore_merges"),
    ("added_tokens",),
    ("added_tokens", 0),
    ("added_tokens", 0, "content"),
    ("added_tokens", 0, "id"),
    ("pre_tokenizer",),
    ("pre_tokenizer", "pretokenizers"),
    ("pre_tokenizer", "pretokenizers", 0, "pattern", "Regex"),
    ("pre_tokenizer", "pretokenizers", 1),
    ("normalizer",),
    ("model", "dropout"),
]


@FUZZ
@given(place=st.sampled_from(PLACES), value=json_values)
def test_damaged_tokenizer_json(tmp_path, model_dir, place, value):
    """One part of a good ``tokenizer.json`` replaced by any JSON value."""
    doc = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    if place:
        *parents, last = place
        node = doc
        for key in parents:
            node = node[key]
        node[last] = value
    else:
        doc = value
    (tmp_path / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    load_or_model_error(tmp_path / "tokenizer.json")


# -- round trip -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(model_dir) -> Tokenizer:
    return Tokenizer.load(model_dir)  # the saved file, as users load it


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(st.text() | st.just(SPECIAL), max_size=8))
def test_decode_encode_is_identity_for_any_unicode(loaded, parts):
    text = "".join(parts)
    assert loaded.decode(loaded.encode(text)) == text
