"""The screens on the tokenizers people use, driven through Pilot at 80x24: the encode view
steps through a GPT-4o encode; the compare view shows GPT-2, GPT-4 and GPT-4o side by side,
with their bytes per token on English and on Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import TextArea

from bpe_tui.app import BpeApp
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.compare.screen import CompareScreen
from bpe_tui.compare.widgets.tokenizer_row import RowTokens, TokenizerRow
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.encode.walk import EncodeWalk
from engine import Tokenizer
from engine.compare.comparison import load_span_tokenizer
from tests.compare_models import gpt2_dir
from tests.exactness import rank_file, tiktoken_encoding
from tests.test_compare_screen import summary
from tests.test_encode_screen import ids_on_screen, status
from tests.train_app import wait_until

ENGLISH = "The quick brown fox jumps over the lazy dog. Tokenizers compress English well."
CHINESE = "却说那大圣在水帘洞里，与群猴闲耍。忽一日，正饮酒之间，猴王忽然忧恼。"


@pytest.fixture(scope="module")
def o200k() -> Tokenizer:
    return Tokenizer.load(rank_file("o200k_base"))


async def test_the_encode_view_steps_through_a_gpt4o_encode(o200k: Tokenizer) -> None:
    text = "The quick brown fox. 西游记<|endoftext|>"
    app = BpeApp(EncodeScreen(o200k, text))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        walk = EncodeWalk(o200k, text)
        assert status(app).startswith(f"step 0/{walk.total} ")
        spans = screen.query_one(TokenSpans)
        assert ids_on_screen(spans)[:3] == [o200k.encode(c)[0] for c in "The"]  # bytes first
        await pilot.press("n")
        assert screen.k == 1 and status(app).startswith(f"step 1/{walk.total} ")
        await pilot.press("e")
        assert screen.k == walk.total
        expected = tiktoken_encoding("o200k_base").encode(text, allowed_special="all")
        assert ids_on_screen(spans) == expected and expected[-1] == 199999


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> list:
    gpt2 = gpt2_dir(tmp_path_factory.mktemp("models"))
    return [load_span_tokenizer(p) for p in (gpt2, rank_file("cl100k_base"), rank_file("o200k_base"))]


def expected_counts(name: str, text: str) -> tuple[int, float]:
    ids = tiktoken_encoding(name).encode(text)
    return len(ids), len(text.encode("utf-8")) / len(ids)


async def test_the_compare_view_shows_gpt2_gpt4_and_gpt4o_on_english_and_chinese(models: list) -> None:
    app = BpeApp(CompareScreen(models, ENGLISH, reference=0))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        rows = list(screen.query(TokenizerRow))
        assert [summary(r).split(" ")[0] for r in rows] == ["gpt2", "cl100k_base", "o200k_base"]
        for text in (ENGLISH, CHINESE):
            if text is CHINESE:
                screen.query_one(TextArea).load_text(CHINESE)
                await wait_until(pilot, lambda: screen.rows[0].text_bytes == len(CHINESE.encode()))
            for row, name in zip(rows[1:], ["cl100k_base", "o200k_base"], strict=True):
                tokens, per_token = expected_counts(name, text)
                assert f"{tokens} tokens" in summary(row) and f"{per_token:.2f} bytes/token" in summary(row)
                shown = ids_on_screen(row.query_one(RowTokens))
                assert shown and shown == tiktoken_encoding(name).encode(text)[: len(shown)]
        per_token = [r.bytes_per_token for r in screen.rows]
        assert per_token[0] < per_token[1] < per_token[2]  # on Chinese, GPT-4o packs the most into a token


def test_the_rows_are_named_as_tiktoken_names_the_encodings(models: list) -> None:
    assert [m.name for m in models] == ["gpt2", "cl100k_base", "o200k_base"]
    assert [m.vocab_size for m in models] == [50257, 100261, 200000]


def test_a_renamed_rank_file_is_still_known(tmp_path: Path) -> None:
    renamed = tmp_path / "gpt-4.tiktoken.gz"
    renamed.write_bytes(rank_file("cl100k_base").read_bytes())
    row = load_span_tokenizer(renamed)
    assert row.name == "gpt-4" and row.tokenize("<|endoftext|>")[0].special
