"""``?`` and ``bpe-tui explain``: each screen's panels in the lecture's words, and its keys."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import TextArea

from bpe_tui.app import SCREENS_BY_NAME, BpeApp
from bpe_tui.compare.screen import CompareScreen
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.help.screen import HelpScreen, HelpText
from bpe_tui.race.screen import RaceScreen
from bpe_tui.train.screen import TrainScreen
from bpe_tui.train.widgets.pair_in_corpus import PairInCorpus
from engine import Tokenizer
from tests.conftest import refused, run_cli
from tests.race_app import TICKING, frozen, race_app, race_over
from tests.test_compare_screen import rows  # noqa: F401  (the fixture)
from tests.test_encode_screen import TEXT, on_screen, tokenizer  # noqa: F401  (the fixture)
from tests.train_app import at_merge, classic_app, train_app


def help_lines(app: BpeApp) -> list[str]:
    assert isinstance(app.screen, HelpScreen)
    return on_screen(app.screen.query_one(HelpText))


def tooltips(screen: type) -> list[str]:
    return [b.tooltip for b in screen.BINDINGS if isinstance(b, Binding)]


async def test_help_names_every_panel_and_key_of_the_training_screen() -> None:
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        titles = [panel.border_title for panel in screen.query("#panels > .row > *, #heap")]
        await pilot.press("question_mark")
        lines = help_lines(app)
        assert app.screen.query_one("#help").border_title == "help: the training screen"
        for title in titles:  # the panels on screen now, each with a paragraph
            assert title in lines
        text = " ".join(lines)
        for words in ("pair_counter", "pair_positions", "prev/next", "lazy", "stale pop", "prev_token", "next_token"):
            assert words in text
        assert PairInCorpus.BORDER_TITLE in lines  # shown with o, explained always
        for words in ("--classic", "</w>", "ties go to the pair seen first", "no encode view"):
            assert words in text
        for tooltip in tooltips(TrainScreen):
            assert tooltip in text
        assert "n       Do one merge" in lines and "?       What this screen shows, and its keys" in lines


async def test_classic_help_lists_only_the_keys_it_offers() -> None:
    """Classic BPE has no encode view and no pair-in-the-corpus panel: their keys are not listed."""
    app, screen = classic_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("question_mark")
        keys = {line.split()[0] for line in help_lines(app) if line[:1].strip() and "  " in line}
        assert {"n", "g", "s", "q"} <= keys
        assert not {"e", "o"} & keys


async def test_esc_q_and_question_mark_close_it_and_the_screen_goes_on() -> None:
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        for key in ("escape", "q", "question_mark"):
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press(key)
            assert app.screen is screen and app.is_running  # q closed the help, not the app
        await pilot.press("n")
        await at_merge(pilot, screen, 1)


async def test_help_scrolls_at_80x24() -> None:
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("question_mark")
        scroll = app.screen.query_one("#help-scroll")
        assert scroll.max_scroll_y > 0  # the text is taller than the terminal
        await pilot.press("end")
        assert scroll.scroll_y == scroll.max_scroll_y


async def test_help_of_the_encode_view_and_typing_a_question_mark(tokenizer: Tokenizer) -> None:  # noqa: F811
    app = BpeApp(EncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 30)) as pilot:
        encode = app.screen
        await pilot.press("question_mark")
        text = " ".join(help_lines(app))
        assert "help: the encode view" == app.screen.query_one("#help").border_title
        for words in ("merge rank", "merges.txt", "tokens and ids", "pre-token", "stats"):
            assert words in text
        for tooltip in tooltips(EncodeScreen):
            assert tooltip in text
        await pilot.press("escape")
        assert app.screen is encode
        await pilot.press("slash", "question_mark")  # in the text box, ? is text
        assert app.screen is encode
        assert "?" in encode.query_one("#text", TextArea).text


async def test_help_of_the_compare_view(rows: list) -> None:  # noqa: F811
    app = BpeApp(CompareScreen(rows, reference=3))
    async with app.run_test(size=(80, 24)) as pilot:
        compare = app.screen
        await pilot.press("question_mark")  # in the text box, where the view opens, ? is text
        assert app.screen is compare
        await pilot.press("escape", "question_mark")
        assert app.screen.query_one("#help").border_title == "help: the compare view"
        text = " ".join(help_lines(app))
        for words in ("character", "byte", "word", "BPE", "--model", "compression ratio", "unknown", "reference", "orange", "underlined"):
            assert words in text
        for tooltip in tooltips(CompareScreen):
            assert tooltip in text
        await pilot.press("escape")
        assert app.screen is compare


async def test_help_of_the_race() -> None:
    app, race = race_app(TICKING, frozen)
    async with app.run_test(size=(80, 24)) as pilot:
        await race_over(pilot, race)
        await pilot.press("question_mark")
        assert app.screen.query_one("#help").border_title == "help: the race"
        text = " ".join(help_lines(app))
        for words in ("recounts every adjacent pair", "pair_counter", "pair_positions", "prev/next", "lazy heap", "verdict", "speed-up"):
            assert words in text
        for tooltip in tooltips(RaceScreen):
            assert tooltip in text
        await pilot.press("q")  # closes the help, not the race
        assert app.screen is race and app.is_running


async def test_no_help_over_a_screen_without_any() -> None:
    app, screen = train_app()
    async with app.run_test(size=(40, 10)) as pilot:  # the too-small notice covers the app
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)


async def test_help_is_in_the_command_palette() -> None:
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        commands = {command.title: command for command in app.get_system_commands(screen)}
        command = commands["help (?)"]
        await command.callback()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


def test_explain_prints_the_help_of_each_screen() -> None:
    for name, screen in SCREENS_BY_NAME.items():
        entry = screen.SCREEN_HELP
        done = run_cli("explain", name)
        assert done.returncode == 0 and done.stderr == ""
        lines = done.stdout.splitlines()
        assert lines[0] == f"bpe-tui {name}: {entry.title}"
        for title, _ in entry.panels:
            assert title in lines
        text = " ".join(lines)
        for tooltip in tooltips(screen):
            assert tooltip in text
    assert list(SCREENS_BY_NAME) == ["train", "encode", "compare", "race", "check"]
    assert run_cli("explain").stdout == run_cli("explain", "train").stdout
    assert "n       Do one merge" in run_cli("explain").stdout.splitlines()


def printed_keys(name: str) -> list[tuple[str, str]]:
    """The key list ``explain NAME`` prints: each line after ``keys``, as (key, what it does)."""
    lines = run_cli("explain", name).stdout.splitlines()
    return [tuple(line.split(maxsplit=1)) for line in lines[lines.index("keys") + 1 :]]


def test_explain_lists_the_keys_bound() -> None:
    for name, keys in {
        "train": ["n", "␣", "+", "-", "f", "g", "b", "s", "e", "c", "o", "w", "x", "t", "p", "q"],
        "encode": ["n", "p", "e", "home", "/", "esc", "c", "q", "q"],
        "compare": ["esc", "/", "r", "q", "q"],
        "race": ["s", "q", "q"],
        "check": ["o", "q"],
    }.items():
        screen = SCREENS_BY_NAME[name]
        printed = printed_keys(name)
        assert [does for _, does in printed] == [*tooltips(screen), *tooltips(BpeApp), "Every key above as a command, by name"]
        assert [key for key, _ in printed] == [*keys, "?", "ctrl+p"]


def test_explain_an_unknown_screen() -> None:
    refused(run_cli("explain", "classic"), "explain classic: no such screen (choose from train, encode, compare, race, check)")


async def test_explain_and_the_help_screen_say_the_same() -> None:
    """At the same width, the help screen's lines are the lines ``explain`` prints."""
    app, screen = train_app()
    async with app.run_test(size=(84, 130)) as pilot:  # 80 columns inside the frame and padding; no scroll bar
        await at_merge(pilot, screen, 0)
        await pilot.press("question_mark")
        shown = [line.rstrip() for line in help_lines(app)]
    printed = [line.rstrip() for line in run_cli("explain", "train").stdout.splitlines()]
    assert printed[2:] == shown
