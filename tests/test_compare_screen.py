"""The compare view driven through Pilot: rows, typing, difference marks, the reference row,
the cursor followed across rows, and the ways in (encode view, command palette)."""

from __future__ import annotations

import pytest
from rich.color import Color
from textual.widgets import Static, TextArea

from bpe_tui.app import BpeApp
from bpe_tui.common.tokens import show_parts
from bpe_tui.compare.screen import CompareScreen
from bpe_tui.compare.widgets.tokenizer_row import ComparedRows, RowTokens, TokenizerRow
from bpe_tui.encode.screen import EncodeScreen
from engine import Tokenizer
from engine.compare.baselines import ByteTokenizer, CharacterTokenizer, WordTokenizer
from engine.compare.comparison import BpeSpans
from tests.test_encode_screen import CORPUS, ids_on_screen, tokenizer  # noqa: F401  (a fixture)
from tests.train_app import at_merge, classic_app, train_app, wait_until

TEXT = "the tech team talks; 你好 zebra!"


@pytest.fixture(scope="module")
def rows(tokenizer: Tokenizer) -> list:  # noqa: F811
    """Character, byte, word (of the test corpus) and a BPE trained on it: the reference."""
    return [
        CharacterTokenizer(),
        ByteTokenizer(),
        WordTokenizer.from_text(CORPUS, ["<|endoftext|>"], name="word (corpus)"),
        BpeSpans(tokenizer, "BPE (corpus)"),
    ]


def summary(row: TokenizerRow) -> str:
    """The row's summary line as shown."""
    static = row.query_one(".summary", Static)
    return " ".join(strip.text for strip in static.render_lines(static.region.reset_offset)).strip()


def backgrounds(tokens: RowTokens, y: int = 0) -> list[tuple[str, Color | None]]:
    """The tokens on line ``y`` (a tokens line) with their background colours."""
    runs: list[tuple[str, Color | None]] = []
    gap = True
    for segment in tokens.render_line(y):
        bg = segment.style.bgcolor if segment.style else None
        base = tokens.rich_style.bgcolor
        if segment.text.strip() == "" and bg in (None, base):
            gap = True
            continue
        if gap:
            runs.append((segment.text, bg))
        else:
            runs[-1] = (runs[-1][0] + segment.text, runs[-1][1])
        gap = False
    return [(text.strip(), bg) for text, bg in runs]


async def test_a_row_per_tokenizer_with_its_counts(rows: list) -> None:
    app = BpeApp(CompareScreen(rows, TEXT, reference=3))
    async with app.run_test(size=(120, 40)):
        screen = app.screen
        widgets = list(screen.query(TokenizerRow))
        assert len(widgets) == 4
        for widget, tokenizer in zip(widgets, rows, strict=True):
            tokens = tokenizer.tokenize(TEXT)
            line = summary(widget)
            assert line.startswith(tokenizer.name)
            assert f"{len(tokens)} tokens" in line
            assert f"{len(TEXT.encode()) / len(tokens):.2f} bytes/token" in line
            shown = ids_on_screen(widget.query_one(RowTokens))
            assert shown == [t.id for t in tokens][: len(shown)] and shown
        assert "reference" in summary(widgets[3])
        assert "2 unknown" in summary(widgets[2])  # the corpus has neither " zebra" nor "!"
        assert "cut differently: the reference has no token with this span" in str(screen.query_one("#legend", Static).render())


async def test_differences_are_coloured_apart(rows: list) -> None:
    app = BpeApp(CompareScreen(rows, TEXT, reference=3))
    async with app.run_test(size=(120, 40)):
        screen = app.screen
        for widget, row in zip(screen.query(RowTokens), screen.rows, strict=True):
            styles = widget.row_styles()
            shown = backgrounds(widget)
            assert shown
            for n, ((text, bg), token, differs) in enumerate(zip(shown, row.tokens, row.differs, strict=False)):  # shown: line 0 only
                if token.unknown:
                    expected = styles.unknown
                elif differs:
                    expected = styles.differs_odd if n % 2 else styles.differs_even
                else:
                    expected = styles.spans.odd if n % 2 else styles.spans.even
                assert bg == expected.bgcolor, (row.tokenizer.name, n, text)
        char, _, word, bpe = screen.rows
        assert not any(bpe.differs)
        assert word.differs == [(t.start, t.end) not in {(b.start, b.end) for b in bpe.tokens} for t in word.tokens]
        assert any(char.differs) and not all(char.differs)  # the single-character tokens of the BPE match


async def test_typing_re_tokenizes_every_row(rows: list) -> None:
    app = BpeApp(CompareScreen(rows, "tech", reference=3))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(app.focused, TextArea)
        await pilot.press("end", "space", "l", "o", "w", "e", "s", "t", "q", "r")  # typed, not keys
        text = "tech lowestqr"
        assert screen.query_one(TextArea).text == text
        await wait_until(pilot, lambda: screen.text == text and screen.rows[0].text_bytes == len(text))
        for widget, tokenizer in zip(screen.query(TokenizerRow), rows, strict=True):
            tokens = tokenizer.tokenize(text)
            assert f"{len(tokens)} tokens" in summary(widget)
            assert ids_on_screen(widget.query_one(RowTokens)) == [t.id for t in tokens]


async def test_the_focused_row_becomes_the_reference(rows: list) -> None:
    app = BpeApp(CompareScreen(rows, TEXT, reference=3))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await pilot.press("escape")  # out of the text, onto the reference row
        row_tokens = list(screen.query(RowTokens))
        assert app.focused is row_tokens[3]
        await pilot.press("shift+tab", "r")  # the word row
        assert screen.reference == 2
        widgets = list(screen.query(TokenizerRow))
        assert "reference" in summary(widgets[2]) and "reference" not in summary(widgets[3])
        assert not any(screen.rows[2].differs) and any(screen.rows[3].differs)
        await pilot.press("slash")
        assert isinstance(app.focused, TextArea)


def in_view(screen: CompareScreen, n: int) -> bool:
    """Whether row ``n`` shows whole, its summary line too."""
    row = list(screen.query(TokenizerRow))[n]
    return screen.query_one(ComparedRows).region.contains_region(row.region)


async def test_the_reference_and_the_focused_row_are_in_view(rows: list) -> None:
    """Seven rows do not fit in 80x24: the reference, last here, is scrolled into view as the
    view opens, and a row given focus shows whole, its summary line too."""
    app = BpeApp(CompareScreen([*rows[:3], *rows[:3], rows[3]], TEXT, reference=6))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: in_view(screen, 6), limit=2.0)
        await pilot.press("escape")  # onto the reference row
        for n in range(5, -1, -1):
            await pilot.press("shift+tab")
            assert app.focused is list(screen.query(RowTokens))[n]
            await wait_until(pilot, lambda n=n: in_view(screen, n), limit=2.0)


async def test_the_token_under_the_cursor_is_underlined_in_every_row(rows: list) -> None:
    text = "the tech 你好"
    app = BpeApp(CompareScreen(rows, text, reference=3))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await pilot.press("end", "left")  # on 好: character 10, bytes 12-15
        for widget, row in zip(screen.query(RowTokens), screen.rows, strict=True):
            underlined = [s for s in widget.render_line(0) if s.style and s.style.underline]
            holding = next(i for i, t in enumerate(row.tokens) if t.start <= 12 < t.end)
            shown = show_parts([t.piece for t in row.tokens])[holding]  # read within the row: 好₁, not \xe5
            assert "".join(s.text for s in underlined).strip() == shown, row.tokenizer.name


async def test_q_quits_when_opened_first(rows: list) -> None:
    app = BpeApp(CompareScreen(rows, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")  # typed into the text
        assert app.is_running and app.screen.query_one(TextArea).text.startswith("q")
        await pilot.press("escape", "q")
    assert not app.is_running


async def test_c_in_the_encode_view_compares_its_text(tokenizer: Tokenizer) -> None:  # noqa: F811
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("c")
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.text == TEXT
        kinds = [t.kind for t in screen.tokenizers]
        assert kinds == ["character", "byte", "word", "BPE", "WordPiece", "Unigram", "BPE"]
        assert screen.reference == 6 and screen.tokenizers[6].name == "this tokenizer"
        assert [t.id for t in screen.rows[6].tokens] == tokenizer.encode(TEXT)
        await pilot.press("escape", "q")
        assert isinstance(app.screen, EncodeScreen)


async def test_c_on_the_training_screen_compares_with_the_tokenizer_trained_so_far() -> None:
    app, screen = train_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("g", *"60", "enter")
        await at_merge(pilot, screen, 60)
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "compare (c)" in titles and "Compare tokenizers" not in titles  # its own, not the sample's
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        compare = app.screen
        assert [t.kind for t in compare.tokenizers] == ["character", "byte", "word", "BPE", "WordPiece", "Unigram", "BPE"]
        trained = compare.tokenizers[-1]
        assert trained.name == "this tokenizer (sample.txt)" and compare.reference == 6
        assert len(trained.tokenizer.merges) == 60
        assert compare.text.startswith(screen.options.opening_text(screen.inputs)[:40])
        await pilot.press("escape", "q")
        assert app.screen is screen


async def test_the_command_palette_compares_on_the_sample_over_classic_training() -> None:
    app, screen = classic_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("c")  # no byte-level tokenizer to compare with
        await pilot.pause(0.2)
        assert app.screen is screen
        await pilot.press("ctrl+p")
        await pilot.press(*"Compare tokenizers", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        compare = app.screen
        assert [t.kind for t in compare.tokenizers] == ["character", "byte", "word", "BPE", "WordPiece", "Unigram"]
        assert not any(c.title == "Compare tokenizers" for c in app.get_system_commands(compare))
        await pilot.press("escape", "q")
        assert app.screen is screen
