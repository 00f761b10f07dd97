"""Bad input, as users make it: one line on stderr naming what is wrong, exit 2, no traceback,
nothing written."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from bpe_tui.app import MIN_SIZE, BpeApp, TooSmallScreen
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.train.screen import TrainScreen
from engine import CorpusError, PreTokenizer, Tokenizer, Trainer
from engine.encode.unigram import UnigramTokenizer
from engine.encode.wordpiece import WordPieceTokenizer
from engine.train.settings import TrainOptions
from tests.conftest import CLI_ENV, fixture_file, refused, run_cli
from tests.train_app import wait_until

SPECIAL = "<|endoftext|>"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    trainer = Trainer.from_text("the cat sat on the mat " * 20, 280, [SPECIAL])
    trainer.run()
    directory = tmp_path_factory.mktemp("model")
    Tokenizer.from_trainer(trainer).save_dir(directory)
    return directory


# -- train ------------------------------------------------------------------------------------

CORPORA = {
    "empty.txt": b"",
    "specials.txt": (SPECIAL * 3).encode(),
    "latin1.txt": "the café is open".encode("latin-1"),
    "ok.txt": b"the cat sat on the mat\n" * 20,
}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing.txt"], ["missing.txt: no such file"]),
        (["data/*.jsonl"], ["data/*.jsonl: no file matches this pattern"]),
        (["empty.txt"], ["empty.txt: the file is empty: no text to train on"]),
        (["specials.txt"], ["specials.txt: it holds nothing but special tokens"]),
        (["latin1.txt"], ["latin1.txt: not valid UTF-8 at byte offset 7", "--errors replace"]),
        (
            ["ok.txt", "--vocab-size", "257", "--special-token", "<s>", "--special-token", "<pad>"],
            ["vocab size 257 is below 258 (256 bytes + 2 special tokens)"],
        ),
        (["ok.txt", "--special-token", ""], ["special tokens must not be empty"]),
        (["ok.txt", "--special-token", "<a>", "--special-token", "<a>"], ["duplicate special token: '<a>'"]),
        (["ok.txt", "--vocab-sise", "300"], ["unrecognized arguments: --vocab-sise"]),
        (["ok.txt", "--vocab-size", "many"], ["--vocab-size: invalid int value: 'many'"]),
        (["ok.txt", "--workers", "0"], ["--workers must be at least 1"]),
        (["ok.txt", "--out", "ok.txt"], ["ok.txt", "not a directory"]),
    ],
)
def test_train_refuses(tmp_path, args, expected):
    for name, data in CORPORA.items():
        (tmp_path / name).write_bytes(data)
    refused(run_cli("train", *args, "--headless", cwd=tmp_path), *expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(CORPORA)  # nothing written


@pytest.mark.parametrize(("path", "expected"), [("missing.txt", "missing.txt: no such file"), ("*.jsonl", "*.jsonl: no file matches")])
def test_interactive_train_refuses_an_unreadable_file_before_any_screen(tmp_path, path, expected):
    done = run_cli("train", path, cwd=tmp_path)
    refused(done, expected)
    assert "\x1b[" not in done.stdout + done.stderr  # no screen was drawn


def test_errors_replace_trains_on_invalid_utf8(tmp_path):
    (tmp_path / "latin1.txt").write_bytes("the café is open, the café is shut".encode("latin-1"))
    done = run_cli("train", "latin1.txt", "--headless", "--vocab-size", "260", "--errors", "replace", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    merged = [a + b for a, b in Tokenizer.load(tmp_path / "out").merges]
    assert any("\ufffd".encode()[:2] in m for m in merged)  # U+FFFD stands for the bad byte


def test_unknown_command(tmp_path):
    refused(run_cli("tokenize", "x.txt", cwd=tmp_path), "invalid choice: 'tokenize'")


# -- model files ----------------------------------------------------------------------------


def test_model_path_that_does_not_exist(tmp_path):
    refused(
        run_cli("encode", "--model", "nowhere/tokenizer.json", "--headless", "--text", "x", cwd=tmp_path),
        "nowhere/tokenizer.json: no such file",
    )
    refused(run_cli("decode", "--model", "nowhere", "1", cwd=tmp_path), "nowhere: no such file")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (lambda good: good[: len(good) // 3], "truncated JSON at line"),
        (lambda good: b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text"),
        (lambda good: b'{"model": [1, 2', "truncated JSON"),
        (lambda good: b"[]", "not a tokenizer.json"),
        (lambda good: good.replace(b'"type": "BPE"', b'"type": "WordLevel"'), "model type is 'WordLevel', only BPE"),
        (lambda good: good.replace(b'"type": "BPE"', b'"type": "Unigram"'), "'model.vocab' is not a non-empty list"),  # read as Unigram
        (lambda good: good.replace(b'"type": "BPE"', b'"type": "WordPiece"'), "'model.unk_token' is missing"),  # read as WordPiece
        (lambda good: b"", "truncated JSON"),
    ],
)
def test_corrupt_truncated_or_wrong_kind_model(tmp_path, model, content, expected):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(content((model / "tokenizer.json").read_bytes()))
    refused(run_cli("encode", "--model", str(path), "--headless", "--text", "x", cwd=tmp_path), str(path), expected)


def test_corpus_passed_as_model(tmp_path):
    (tmp_path / "corpus.txt").write_text("the cat sat\n")
    refused(run_cli("encode", "--model", "corpus.txt", "--headless", "--text", "x", cwd=tmp_path), "corpus.txt: not a tokenizer.json")


# -- decode -----------------------------------------------------------------------------------


def test_decode_prints_the_text(tmp_path, model):
    ids = Tokenizer.load(model).encode("the mat, 日本")
    done = run_cli("decode", "--model", str(model), *map(str, ids), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "the mat, 日本"
    piped = run_cli("decode", "--model", str(model), cwd=tmp_path, stdin=json.dumps(ids))
    assert piped.stdout == "the mat, 日本"


def test_decode_ends_its_line_on_a_terminal(tmp_path, model):
    """The shell's prompt starts a line of its own; piped, the text is exact (above)."""
    ids = Tokenizer.load(model).encode("the mat")
    main_end, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bpe_tui.cli", "decode", "--model", str(model), *map(str, ids)],
            cwd=tmp_path,
            env=CLI_ENV,
            stdout=terminal,
            timeout=120,
        )
        written = os.read(main_end, 1024)
    finally:
        os.close(terminal)
        os.close(main_end)
    assert done.returncode == 0 and written == b"the mat\r\n"  # the terminal writes \n as \r\n


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["116", "9999"], "tokenizer.json: token id 9999 at index 1 is not in the vocabulary (0-"),
        (["116", "-1"], "not a token id: '-1'"),
        (["1e3"], "not a token id: '1e3'"),
    ],
)
def test_decode_refuses_ids_outside_the_vocabulary(tmp_path, model, ids, expected):
    refused(run_cli("decode", "--model", str(model / "tokenizer.json"), *ids, cwd=tmp_path), expected)


@pytest.mark.parametrize("kind", ["wordpiece", "unigram", "sentencepiece"])
def test_decode_refuses_an_id_outside_the_vocabulary_of_every_kind(tmp_path, kind):
    if kind == "wordpiece":
        WordPieceTokenizer(["[UNK]", "hello", "world"]).save_dir(tmp_path)
        path, top = tmp_path, 2
    elif kind == "unigram":
        UnigramTokenizer([("<unk>", 0.0), ("▁hello", -1.0), ("▁world", -1.0), ("▁", -2.0)]).save_dir(tmp_path)
        path, top = tmp_path, 3
    else:
        pytest.importorskip("sentencepiece")
        path, top = fixture_file("spm-unigram-400.model"), 399
    refused(run_cli("decode", "--model", str(path), "1", "9999"), f"{path}: token id 9999 at index 1 is not in the vocabulary (0-{top})")


# -- the app ----------------------------------------------------------------------------------


async def test_terminal_too_small_shows_a_message_until_it_fits(model):
    app = BpeApp(EncodeScreen(Tokenizer.load(model), "the cat"))
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        message = str(app.screen.query_one("#too-small").render())
        assert "40×10" in message and f"{MIN_SIZE.width}×{MIN_SIZE.height}" in message
        await pilot.press("n")  # keys do not reach the screen beneath
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert isinstance(app.screen, EncodeScreen) and app.screen.k == 0
        await pilot.resize_terminal(MIN_SIZE.width - 1, 24)
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)


async def test_app_on_a_bad_corpus_closes_with_the_message(tmp_path):
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    app = BpeApp(TrainScreen(tmp_path / "latin1.txt", TrainOptions(300, (SPECIAL,), workers=1)))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.failure is not None)
    assert app.return_code == 2
    assert isinstance(app.failure, CorpusError) and "latin1.txt: not valid UTF-8 at byte offset 3" in str(app.failure)


def test_more_distinct_pre_tokens_than_the_merge_loop_lays_out_are_refused_before_laying_out(monkeypatch):
    from engine.train import trainer as trainer_module

    monkeypatch.setattr(trainer_module, "LAYOUT_LIMIT", 2)
    with pytest.raises(CorpusError, match=r"^3 distinct pre-tokens: more than the merge loop lays out \(2\)"):
        Trainer({b"abcdef": 2, b"ghijkl": 1, b"mnopqr": 1}, 300)
    assert Trainer({b"abcdef": 2, b"ghijkl": 1}, 300).merges_planned


def test_counts_too_large_to_lay_out_are_refused_from_their_header(tmp_path, monkeypatch):
    from engine.corpus import counts_file
    from engine.corpus.counting import count_table
    from engine.corpus.shards import CountSettings
    from engine.train import trainer as trainer_module

    corpus, path = tmp_path / "c.txt", tmp_path / "c.counts"
    corpus.write_text("abcdef ghijkl mnopqr", encoding="utf-8")
    table, summary = count_table([str(corpus)], CountSettings("gpt2", ()))
    counts_file.save_counts(path, table, PreTokenizer("gpt2"), summary)
    assert counts_file.saved_sizes(path) == (3, 20)  # "abcdef", " ghijkl", " mnopqr"
    assert counts_file.saved_sizes(tmp_path / "missing.counts") is None
    monkeypatch.setattr(trainer_module, "LAYOUT_LIMIT", 2)
    monkeypatch.setattr(trainer_module, "load_saved_counts", lambda *a: pytest.fail("read past the header"))
    with pytest.raises(CorpusError, match=r"^3 distinct pre-tokens: more than the merge loop lays out"):
        Trainer.from_counts_file(path, 300)


def test_running_out_of_memory_is_one_line_and_status_1(capsys):
    from bpe_tui import cli

    def fail() -> int:
        raise MemoryError("too much")

    assert cli._said(fail) == 1
    err = capsys.readouterr().err
    assert err == "bpe-tui: out of memory (too much); try fewer --workers, or --max-memory\n"
