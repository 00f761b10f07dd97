"""The encode view driven through Pilot: stepping, editing, focus and leaving."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import Static, TextArea

from bpe_tui.app import BpeApp
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.encode.walk import EncodeWalk
from bpe_tui.encode.widgets.pair_ranks import PairRanks
from engine import Tokenizer, Trainer

CORPUS = (
    "the tech team talks about tokens; the tech lead tests the tokenizer. low lower lowest newer newest wider widest. 你好 你好世界. "
) * 20
TEXT = "the tech tests: lowest 你好<|endoftext|> newer"


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    trainer = Trainer.from_text(CORPUS, 320, ["<|endoftext|>"])
    trainer.run()
    return Tokenizer.from_trainer(trainer)


def on_screen(widget) -> list[str]:
    """The lines a widget without a border shows now."""
    return [strip.text.rstrip() for strip in widget.render_lines(Region(0, 0, *widget.content_size))]


def spans_on_screen(spans: TokenSpans) -> list[str]:
    """The lines inside the token spans' border."""
    return [spans.render_line(y).text.rstrip() for y in range(spans.scrollable_content_region.height)]


def ids_on_screen(spans: TokenSpans) -> list[int]:
    """Every id on the id lines (every second line) of the token spans."""
    return [int(n) for line in spans_on_screen(spans)[1::2] for n in line.split()]


def status(app: BpeApp) -> str:
    return str(app.screen.query_one("#status", Static).render())


async def test_opens_on_raw_bytes_with_stepping_focused(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        walk = EncodeWalk(tokenizer, TEXT)
        assert isinstance(app.focused, TokenSpans)
        assert status(app).startswith(f"step 0/{walk.total} ")
        raw = [i for parts in walk.parts(0) for i in parts]
        assert ids_on_screen(screen.query_one(TokenSpans)) == raw
        await pilot.press("n", "n", "n")
        assert screen.k == 3
        assert status(app).startswith(f"step 3/{walk.total} ")
        assert ids_on_screen(screen.query_one(TokenSpans)) == [i for p in walk.parts(3) for i in p]


async def test_step_back_end_and_home(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        total = screen.walk.total
        await pilot.press("n", "n", "p")
        assert screen.k == 1
        await pilot.press("p", "p")  # stays at the raw bytes
        assert screen.k == 0
        await pilot.press("e")
        assert status(app).startswith(f"step {total}/{total} ")
        assert ids_on_screen(screen.query_one(TokenSpans)) == tokenizer.encode(TEXT)
        await pilot.press("n")  # nothing past the end
        assert screen.k == total
        await pilot.press("home")
        assert screen.k == 0
        assert status(app).startswith(f"step 0/{total} ")


async def test_home_steps_even_when_the_tokens_scroll(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, "\n".join([TEXT] * 12)))
    async with app.run_test(size=(80, 24)) as pilot:
        spans = app.screen.query_one(TokenSpans)
        assert spans.virtual_size.height > spans.scrollable_content_region.height
        await pilot.press("e", "home")
        assert app.screen.k == 0


async def test_every_step_matches_the_engine(tokenizer: Tokenizer) -> None:
    """Stepping through all merges shows each pre-token's rounds in order, ending on encode."""
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        walk = screen.walk
        merges = [(t.text, s) for t in walk.traces for s in t.steps if s.chosen is not None]
        for k, (_, step) in enumerate(merges):
            focus = walk.focus(k)
            assert focus is not None and focus.step is step
            assert f"merge rank {step.ranks[step.chosen]}" in status(app)
            await pilot.press("n")
        assert screen.k == walk.total == len(merges)
        assert ids_on_screen(screen.query_one(TokenSpans)) == tokenizer.encode(TEXT)


async def test_pair_ranks_show_the_lowest_rank(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, " tech"))
    async with app.run_test(size=(80, 24)):
        focus = app.screen.walk.focus(0)
        pairs = app.screen.query_one(PairRanks)
        lines = on_screen(pairs.query_one("#round")) + on_screen(pairs.query_one("#pairs-table"))
        ranked = [r for r in focus.step.ranks if r is not None]
        lowest = next(line for line in lines if "◀ lowest" in line)
        assert lowest.split()[-3] == str(min(ranked))
        assert any("not in merges" in line for line in lines) == (None in focus.step.ranks)
        assert any(line.startswith("merges now:") for line in lines)


async def test_editing_re_encodes_at_once(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, "tech"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await pilot.press("slash")
        assert isinstance(app.focused, TextArea)
        await pilot.press("end", "space", "n", "e", "w", "e", "s", "t")  # typed, not stepping keys
        text = "tech newest"
        assert screen.query_one(TextArea).text == text
        assert screen.k == screen.walk.total
        assert ids_on_screen(screen.query_one(TokenSpans)) == tokenizer.encode(text)
        await pilot.press("escape")
        assert isinstance(app.focused, TokenSpans)
        await pilot.press("home", "n")
        assert screen.k == 1


async def test_tab_moves_into_the_text(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("tab")
        assert isinstance(app.focused, TextArea)
        await pilot.press("escape", "n")
        assert app.screen.k == 1


async def test_special_tokens_and_partial_utf8(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, "你<|endoftext|>"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        first = spans_on_screen(app.screen.query_one(TokenSpans))[0]
        assert "你₁ 你₂ 你₃" in first and "\ufffd" not in first  # a partial character names its bytes
        await pilot.press("e")
        token_line = spans_on_screen(app.screen.query_one(TokenSpans))[0]
        assert "<|endoftext|>" in token_line
        assert "\\x" in token_line or "你" in token_line
        assert "\ufffd" not in token_line
        assert ids_on_screen(app.screen.query_one(TokenSpans)) == tokenizer.encode("你<|endoftext|>")


async def test_empty_text(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, ""))
    async with app.run_test(size=(80, 24)) as pilot:
        assert status(app).startswith("step 0/0 ")
        await pilot.press("n", "e", "p", "home")
        assert app.screen.k == 0


async def test_command_palette_runs_a_step(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await pilot.press("ctrl+p")
        await pilot.press(*"next")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen
        assert screen.k == 1


async def test_q_quits_when_alone(tokenizer: Tokenizer) -> None:
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


class Below(Screen):
    """Stands in for the screen the encode view is opened from."""


async def test_q_goes_back_to_the_screen_below(tokenizer: Tokenizer) -> None:
    below = Below()
    app = BpeApp(below)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(EncodeScreen(tokenizer))
        await pilot.pause()
        assert isinstance(app.screen, EncodeScreen)
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is below
        assert app.is_running
