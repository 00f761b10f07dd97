"""SVG snapshots of the compare view (update with ``pytest --snapshot-update``).

Deterministic: fixed texts, tokenizers built from the bundled sample (and GPT-2's files and
tiny WordPiece and Unigram models trained on it), the text cursor not blinking."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from bpe_tui.app import BpeApp
from bpe_tui.compare.screen import CompareScreen
from engine.compare.comparison import corpus_tokenizers, load_span_tokenizer
from tests.compare_models import SAMPLE, fixed_unigram_json, fixed_wordpiece_json, gpt2_dir
from tests.exactness import rank_file


def ladder() -> list:
    return corpus_tokenizers(SAMPLE)


async def steady(pilot) -> None:
    pilot.app.screen.query_one(TextArea).cursor_blink = False
    await pilot.pause()


def test_sample_80x24(snap_compare) -> None:
    """The rows of the lecture on its own example, the trained BPE the reference."""
    assert snap_compare(BpeApp(CompareScreen(ladder(), reference=3)), terminal_size=(80, 24), run_before=steady)


def test_word_row_as_reference_80x24(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await steady(pilot)
        await pilot.press("escape", "shift+tab", "r")

    app = BpeApp(CompareScreen(ladder(), "the keeper's cat 你好 unbelievable", reference=3))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_every_kind_200x50(snap_compare, tmp_path: Path) -> None:
    """GPT-2, WordPiece and Unigram beside the lecture's ladder, GPT-2 the reference."""
    models = [load_span_tokenizer(p) for p in (gpt2_dir(tmp_path), fixed_wordpiece_json(tmp_path), fixed_unigram_json(tmp_path))]
    text = "Hello, 🌍! 你好! The keeper's cat watched 1234 unbelievable waves.\nTokenizers cut the same text differently."
    rows = ladder()
    app = BpeApp(CompareScreen([*rows, *models], text, reference=len(rows)))
    assert snap_compare(app, terminal_size=(200, 50), run_before=steady)


def test_gpt2_gpt4_gpt4o_80x24(snap_compare, tmp_path: Path) -> None:
    """GPT-2, GPT-4 (cl100k_base) and GPT-4o (o200k_base) on English and Chinese, GPT-2 the reference."""
    models = [load_span_tokenizer(p) for p in (gpt2_dir(tmp_path), rank_file("cl100k_base"), rank_file("o200k_base"))]
    text = "The quick brown fox jumps over the lazy dog.\n却说那大圣在水帘洞里，与群猴闲耍。"
    app = BpeApp(CompareScreen(models, text, reference=0))
    assert snap_compare(app, terminal_size=(80, 24), run_before=steady)
