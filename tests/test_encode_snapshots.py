"""SVG snapshots of the encode view (update with ``pytest --snapshot-update``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from bpe_tui.app import BpeApp
from bpe_tui.encode.screen import EncodeScreen
from engine import Tokenizer
from tests.conftest import fixture_file
from tests.test_encode_screen import TEXT, tokenizer  # noqa: F401  (the fixture)


def test_raw_bytes_80x24(snap_compare, tokenizer: Tokenizer) -> None:  # noqa: F811
    assert snap_compare(BpeApp(EncodeScreen(tokenizer, TEXT)), terminal_size=(80, 24))


def test_after_three_merges_80x24(snap_compare, tokenizer: Tokenizer) -> None:  # noqa: F811
    assert snap_compare(BpeApp(EncodeScreen(tokenizer, TEXT)), press=["n", "n", "n"], terminal_size=(80, 24))


def test_end_80x24(snap_compare, tokenizer: Tokenizer) -> None:  # noqa: F811
    assert snap_compare(BpeApp(EncodeScreen(tokenizer, TEXT)), press=["e"], terminal_size=(80, 24))


def test_mid_encode_160x48(snap_compare, tokenizer: Tokenizer) -> None:  # noqa: F811
    text = TEXT + "\nthe lowest newer widest tech team talks"
    assert snap_compare(BpeApp(EncodeScreen(tokenizer, text)), press=["n"] * 12, terminal_size=(160, 48))


def test_gpt2_tech_200x50(snap_compare, tmp_path: Path) -> None:
    """The lecture's example: `` tech`` with GPT-2's merges, one merge in."""
    shutil.copy(fixture_file("gpt2_vocab.json"), tmp_path / "vocab.json")
    shutil.copy(fixture_file("gpt2_merges.txt"), tmp_path / "merges.txt")
    app = BpeApp(EncodeScreen(Tokenizer.load(tmp_path), " tech"))
    assert snap_compare(app, press=["n"], terminal_size=(200, 50))
