"""``bpe-tui race --headless`` as a user (or CI) runs it, and its refusals."""

from __future__ import annotations

import pytest

from bpe_tui.common.corpus import sample_corpus
from bpe_tui.race.command import run_headless
from engine import PreTokenizer
from engine.train.settings import TrainOptions
from tests.conftest import refused, run_cli
from tests.race_app import SWAPPED


def test_headless_race_on_the_sample():
    done = run_cli("race", "--headless", "--vocab-size", "300")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "race on sample.txt (bundled sample), 43 merges (vocab 300): counted 504 distinct pre-tokens" in out
    assert "not part of the race" in out
    for row in ("merges", "counting", "merging", "merges/s"):
        assert f"\n  {row} " in out
    assert out.count("43/43") == 2
    assert "agreement: all 43 merges agree" in out
    assert "speed-up: optimized merges" in out and "faster than reference" in out


@pytest.mark.parametrize("pattern", ["gpt4", "o200k", "qwen2"])
def test_both_racers_count_with_the_given_pattern_and_special_tokens(tmp_path, pattern):
    text = "Héllò hôw<s>are ü? DON'T   stop 12345<s>intj intj tech tech\n" * 5
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    done = run_cli("race", str(corpus), "--headless", "--vocab-size", "280", "--pattern", pattern, "--special-token", "<s>")
    assert done.returncode == 0, done.stderr
    counts = PreTokenizer(pattern, ["<s>"]).count(text)
    assert counts != PreTokenizer("gpt2", ["<s>"]).count(text)  # the pattern counts otherwise
    distinct = len(counts)
    assert f"counted {distinct:,} distinct pre-tokens" in done.stdout
    assert "agreement: all" in done.stdout


def test_a_mismatch_fails_the_headless_race(capsys):
    with sample_corpus() as path:
        status = run_headless([str(path)], "sample.txt", TrainOptions(300, ("<|endoftext|>",)), SWAPPED)
    out = capsys.readouterr().out
    assert status == 1
    assert "agreement: MISMATCH at merge 5: reference b' ' + b'w', optimized b' ' + b's'" in out


def test_refusals(tmp_path):
    refused(run_cli("race", str(tmp_path / "missing.txt"), "--headless"), "missing.txt: no such file or directory")
    refused(run_cli("race", "--vocab-size", "256", "--headless"), "vocab size 256 is below 257")
    (tmp_path / "empty.txt").write_text("")
    refused(run_cli("race", str(tmp_path / "empty.txt"), "--headless"), "empty.txt: the file is empty")
    refused(run_cli("race", "--vocab-sise", "3"), "unrecognized arguments: --vocab-sise")
