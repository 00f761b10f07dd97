"""``bpe-tui train --algorithm unigram`` run as a user runs it: the summary, the file Hugging
Face opens, ``encode``/``decode``/``compare`` on it, Ctrl-C at a round's end, one line for bad
input; and Unigram ``tokenizer.json`` files from Hugging Face opened by ``Tokenizer.load``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Tokenizer, UnigramTokenizer
from engine.compare.comparison import UnigramSpans
from engine.encode.unigram import SPACE
from tests.compare_models import unigram_json
from tests.conftest import CLI_ENV, ROOT, fixture_file, refused, run_cli

CORPUS = str(fixture_file("corpus.en"))
TEXTS = st.text(st.characters(codec="utf-8"), max_size=40) | st.lists(
    st.sampled_from(["the", " cat", "  ", " ", "\n", "\t", "<unk>", SPACE, "你好", "é", "🌍", "ing", "x"]), max_size=16
).map("".join)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """corpus.en at 1,000, headless, into a directory of its own."""
    out = tmp_path_factory.mktemp("unigram")
    done = run_cli("train", CORPUS, "--algorithm", "unigram", "--headless", "--vocab-size", "1000", "--out", "tok", cwd=out)
    assert done.returncode == 0, done.stderr
    return out / "tok", done


def test_headless_writes_tokenizer_json_and_a_summary(trained):
    out, done = trained
    assert [p.name for p in out.iterdir()] == ["tokenizer.json"]
    for line in ("rounds ", "of EM and pruning", "1,000 pieces (1 special + ", "chars/token", "tok/tokenizer.json"):
        assert line in done.stdout, done.stdout
    model = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    assert model["model"]["type"] == "Unigram" and model["pre_tokenizer"]["type"] == "Metaspace"
    assert len(model["model"]["vocab"]) == 1000 and model["model"]["vocab"][0] == ["<unk>", 0.0]


def test_the_summary_says_when_the_vocabulary_stops_short_of_the_size_asked(trained, tmp_path):
    (tmp_path / "small.txt").write_text("the cat sat on the mat with the other cat\n" * 3, encoding="utf-8")
    done = run_cli("train", "small.txt", "--algorithm", "unigram", "--headless", "--vocab-size", "1000", "--out", "tok", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    pieces = len(json.loads((tmp_path / "tok" / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"])
    summary = " ".join(done.stdout.split())
    assert f"{1000 - pieces:,} short of the 1,000 asked: this corpus supports no more" in summary
    assert "short of" not in trained[1].stdout  # corpus.en fills its 1,000


def test_the_summary_counts_the_corpus_as_the_saved_model_encodes_it(trained):
    """The compression line's tokens are the saved model's tokens of the corpus, line by line."""
    out, done = trained
    tokenizer = Tokenizer.load(out)
    assert isinstance(tokenizer, UnigramTokenizer)
    tokens = sum(len(tokenizer.encode(line)) for line in Path(CORPUS).read_text(encoding="utf-8").split("\n") if line.strip(" "))
    assert f"→ {tokens:,} tokens" in done.stdout


def test_the_saved_model_encodes_as_hugging_face_does(trained):
    tokenizers = pytest.importorskip("tokenizers")
    out, _ = trained
    ours = Tokenizer.load(out / "tokenizer.json")
    theirs = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    text = Path(CORPUS).read_text(encoding="utf-8")[:5000] + "  naïve 日本語 <unk> x\u00a0y ▁z"
    assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids


def test_encode_decode_and_compare_open_it(trained):
    out, _ = trained
    text = "Hello  world, 你好 <unk>"
    tokenizer = Tokenizer.load(out)
    done = run_cli("encode", "--model", str(out), "--headless", "--json", "--text", text)
    assert done.returncode == 0, done.stderr
    tokens = json.loads(done.stdout)
    assert [t["id"] for t in tokens] == tokenizer.encode(text)
    assert [t["text"] for t in tokens] == [tokenizer.token(t["id"]) for t in tokens]
    assert tokens[0]["text"].startswith(SPACE) and tokens[0]["bytes"] == list(tokens[0]["text"].encode())
    printed = run_cli("encode", "--model", str(out), "--headless", "--text", text)
    assert printed.returncode == 0 and "tokens ·" in printed.stdout and "<unk>" in printed.stdout
    ids = [str(t["id"]) for t in tokens]
    decoded = run_cli("decode", "--model", str(out), *ids)
    assert decoded.returncode == 0 and decoded.stdout == tokenizer.decode([int(i) for i in ids])
    compared = run_cli("compare", "--json", "--text", text, "--model", str(out))
    assert compared.returncode == 0, compared.stderr
    row = json.loads(compared.stdout)["rows"][-1]
    assert (row["name"], row["kind"], row["vocab_size"]) == ("tok", "Unigram", 1000)
    assert [s["id"] for s in row["spans"]] == tokenizer.encode(text)


def test_encode_out_and_resume_say_what_they_take(trained, tmp_path):
    out, _ = trained
    (tmp_path / "x.txt").write_text("the cat\n")
    refused(run_cli("encode", "--model", str(out), "--file", "x.txt", "--out", "ids.bin", cwd=tmp_path), "is a Unigram model")
    assert not (tmp_path / "ids.bin").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vocab-size", "50"], "vocab size 50 is below the 1 special token and the "),
        (["--vocab-size", "1"], "vocab size 1 leaves no room beside the 1 special token for the characters"),
        (["--vocab-size", "0"], "vocab size 0 leaves no room beside the 1 special token for the characters"),
        (["--vocab-size", "-5"], "vocab size -5 leaves no room beside the 1 special token for the characters"),
        (["--classic"], "--classic is classic BPE: it does not go with --algorithm unigram"),
        (["--resume", "out"], "--resume does not apply to --algorithm unigram"),
        (["--pattern", "gpt4"], "--pattern does not apply to --algorithm unigram: it cuts words at spaces"),
        (["--workers", "2"], "--workers does not apply to --algorithm unigram"),
        (["--follow", "the"], "--follow follows words through byte-level BPE: not with --algorithm unigram"),
        (["--trace", "t.csv"], "--trace writes merges: Unigram trains by rounds"),
        (["--lowercase"], "--lowercase goes with --algorithm wordpiece: Unigram keeps the text as it is"),
        (["--special-token", "<s>"], "the special tokens must hold <unk>"),
        (["--special-token", "<unk>", "--special-token", "<unk>"], "a special token is given twice"),
        (["--words", "punct"], "--words goes with --classic: Unigram cuts words at spaces"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path, args, message):
    refused(run_cli("train", CORPUS, "--algorithm", "unigram", "--headless", *args, cwd=tmp_path), message)
    assert list(tmp_path.iterdir()) == []


def test_two_corpora_are_one_line(tmp_path):
    refused(run_cli("train", CORPUS, CORPUS, "--algorithm", "unigram", "--headless", cwd=tmp_path), "trains on one plain-text file")
    assert list(tmp_path.iterdir()) == []


def _run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=CLI_ENV, capture_output=True, text=True)


def test_ctrl_c_stops_at_a_rounds_end_and_saves_what_is_trained(tmp_path):
    """SIGINT in the first round: the run ends when it ends, and its pieces are saved."""
    code = f"""
import os, signal, sys
from engine.train.unigram.trainer import UnigramTrainer
step = UnigramTrainer.step
def interrupted(self):
    if self.rounds_done == 0:
        os.kill(os.getpid(), signal.SIGINT)
    return step(self)
UnigramTrainer.step = interrupted
from bpe_tui.cli import main
sys.exit(main(["train", {CORPUS!r}, "--algorithm", "unigram", "--headless", "--vocab-size", "600", "--out", "tok"]))
"""
    done = _run_python(code, tmp_path)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "interrupted after round 1: saved its " in done.stderr
    saved = Tokenizer.load(tmp_path / "tok")
    assert isinstance(saved, UnigramTokenizer) and len(saved.vocab) > 600  # pruning had not finished
    assert "rounds       1 of EM and pruning" in done.stdout


def test_ctrl_c_while_reading_saves_nothing(tmp_path):
    code = f"""
import os, signal, sys
from engine.train.unigram import trainer
def interrupted(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
trainer.count_file_words = interrupted
from bpe_tui.cli import main
sys.exit(main(["train", {CORPUS!r}, "--algorithm", "unigram", "--headless", "--out", "tok"]))
"""
    done = _run_python(code, tmp_path)
    assert done.returncode == 130, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == "bpe-tui: interrupted while reading the words of corpus.en: nothing trained, nothing saved"
    assert not (tmp_path / "tok").exists()


# -- Unigram files from elsewhere ---------------------------------------------------------


@pytest.fixture(scope="module")
def hf_unigram(tmp_path_factory):
    """A Unigram trained by Hugging Face tokenizers on the sample: ``Metaspace``, no normalizer."""
    return unigram_json(tmp_path_factory.mktemp("hf"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS)
def test_hugging_faces_unigram_files_open_and_encode_as_it_does(hf_unigram, text):
    tokenizers = pytest.importorskip("tokenizers")
    ours = Tokenizer.load(hf_unigram)
    theirs = tokenizers.Tokenizer.from_file(str(hf_unigram))
    assert isinstance(ours, UnigramTokenizer)
    assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS)
def test_unigram_rows_span_the_text_piece_by_piece(trained, text):
    """Each piece spans the bytes it stands for, in order: a piece's ``▁`` its space (a run
    of them, which the normalizer made one), nothing where it was put before the text."""
    out, _ = trained
    row = UnigramSpans(Tokenizer.load(out), "tok")
    tokens = row.tokenize(text)
    data = text.encode("utf-8")
    assert [t.id for t in tokens] == row.tokenizer.encode(text)
    at = 0
    for token in tokens:
        assert at <= token.start <= token.end <= len(data)
        covered = data[token.start : token.end].decode("utf-8")
        if token.special:
            assert covered == token.piece.decode()
        elif not token.unknown:
            piece = token.piece.decode()
            assert covered.lstrip(" ") == piece.removeprefix(SPACE) or covered == piece  # ▁ for spaces, or a ▁ of the text
        at = token.end
    assert data[at:].strip(b" ") == b""  # spaces the model drops at the end at most


def test_a_unigram_file_the_engine_cannot_reproduce_is_one_line(hf_unigram, tmp_path):
    doc = json.loads(hf_unigram.read_text(encoding="utf-8"))
    doc["normalizer"] = {"type": "NFKC"}
    path = tmp_path / "nfkc.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    refused(run_cli("encode", "--model", str(path), "--headless", "--text", "x"), "normalizer 'NFKC' is not supported")
    done = run_cli("compare", "--json", "--text", "x", "--model", str(path))  # compare opens it through tokenizers
    if done.returncode == 0:
        assert json.loads(done.stdout)["rows"][-1]["kind"] == "Unigram"


def test_help_names_unigram():
    done = subprocess.run([sys.executable, "-m", "bpe_tui.cli", "train", "--help"], cwd=ROOT, env=CLI_ENV, capture_output=True, text=True)
    assert "unigram (SentencePiece's" in " ".join(done.stdout.split())
