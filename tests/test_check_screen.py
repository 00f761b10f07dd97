"""The check as a student sees it: the check screen, then the training screen opened paused
just before their first differing merge with both pairs marked (or the encode view where
their ids part), and ``n`` going on with the rule. A served app never runs a file."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.binding import Binding

from bpe_tui.app import SCREENS_BY_NAME, BpeApp
from bpe_tui.check.jobs import EncodingCheck, TrainingCheck
from bpe_tui.check.screen import NOT_SERVED, CheckScreen
from bpe_tui.check.student import Target
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.train.screen import TrainScreen
from bpe_tui.train.widgets.pair_table import PairTable
from bpe_tui.train.widgets.status_line import StatusLine
from engine import Tokenizer, Trainer
from engine.check.merges import check_training
from engine.train.settings import TrainOptions
from tests.conftest import FIXTURES, fixture_file
from tests.test_encode_screen import on_screen
from tests.train_app import at_merge, wait_until

STUDENTS = FIXTURES / "students"
CORPUS = fixture_file("tinystories_sample.txt")
OPTIONS = TrainOptions(300, ("<|endoftext|>",), workers=1)


def training_check(student: str) -> CheckScreen:
    return CheckScreen(TrainingCheck(Target.parse(f"{STUDENTS / student}:train_bpe"), str(CORPUS), CORPUS.name, OPTIONS))


def text_of(widget) -> str:
    """What a widget shows, its lines joined by spaces (a long line wraps)."""
    return " ".join(line.strip() for line in on_screen(widget))


def drawn(panel: PairTable) -> list[str]:
    """The lines the pair table draws now (inside its border)."""
    text = panel.render()
    assert isinstance(text, Text)
    return text.plain.splitlines()


def status(screen: TrainScreen) -> str:
    return str(screen.query_one(StatusLine).render())


async def test_the_training_screen_opens_paused_before_the_differing_merge() -> None:
    check = training_check("tie_flipped.py")
    app = BpeApp(check)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrainScreen), limit=60)
        train = app.screen
        assert isinstance(train, TrainScreen)
        await at_merge(pilot, train, 6)
        assert "merge 6/43" in status(train) and "check: your merge 7 differs" in status(train) and "paused" in status(train)
        rows = drawn(train.query_one(PairTable))
        rule = next(line for line in rows if "◀ rule" in line)
        yours = next(line for line in rows if "◀ yours" in line)
        assert rule.split()[:3] == ["1", "e|d", "42"] and yours.split()[1:3] == ["␣|f", "=42"]
        assert "= tie, greater bytes win:" in rows[-2] and rows[-1].startswith("e > ␣: the left tokens decide")

        await pilot.press("n")  # the rule's merge
        await at_merge(pilot, train, 7)
        assert train.snapshot is not None and train.snapshot.last is not None and train.snapshot.last.token == b"ed"
        assert "◀" not in "\n".join(drawn(train.query_one(PairTable)))  # marked only just before it
        assert "check: your merge 7 differs" in status(train)

        await pilot.press("b")  # back: marked again
        await at_merge(pilot, train, 6)
        assert "◀ yours" in "\n".join(drawn(train.query_one(PairTable)))

        await pilot.press("q")  # back to the check
        await wait_until(pilot, lambda: app.screen is check)
        verdict = text_of(check.query_one("#verdict"))
        assert "merge 7 differs: yours (b' ', b'f'), the rule's (b'e', b'd')" in verdict
        await pilot.press("o")  # and there again
        await wait_until(pilot, lambda: isinstance(app.screen, TrainScreen) and app.screen is not train, limit=60)
        await at_merge(pilot, app.screen, 6)
        await pilot.press("q")
        await wait_until(pilot, lambda: app.screen is check)
        await pilot.press("q")
    assert app.return_code == 1


async def test_a_count_that_differs_marks_yours_with_its_count() -> None:
    app = BpeApp(training_check("specials_merged.py"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TrainScreen), limit=60)
        await at_merge(pilot, app.screen, 4)
        rows = drawn(app.screen.query_one(PairTable))
        assert any("◀ yours" in line and "n|d" in line and "45" in line for line in rows)
        assert rows[-1] == "◀ yours: 45 < 47: the most frequent pair merges first"


async def test_all_agree_stays_on_the_check_with_nothing_to_open() -> None:
    check = training_check("right_trainer.py")
    app = BpeApp(check)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: check.verdict is not None, limit=60)
        await pilot.pause()
        assert app.screen is check
        assert "43 of 43 merges match; the vocabulary matches" in text_of(check.query_one("#verdict"))
        assert "exit status 0" in text_of(check.query_one("#check-phase"))
        assert check.check_action("open", ()) is None  # dimmed: nowhere to go
        await pilot.press("q")
    assert app.return_code == 0


async def test_an_exception_shows_the_students_frames_and_what_it_printed(tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(
        "def helper(x):\n    return x['missing']\n\n\ndef train_bpe(input_path, vocab_size, special_tokens):\n"
        "    print('reading', input_path)\n    return helper({})\n",
        encoding="utf-8",
    )
    check = CheckScreen(TrainingCheck(Target.parse(f"{tmp_path / 'loud.py'}:train_bpe"), str(CORPUS), CORPUS.name, OPTIONS))
    app = BpeApp(check)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: check.verdict is not None, limit=60)
        await pilot.pause()
        verdict = text_of(check.query_one("#verdict"))
        assert "loud.py:train_bpe raised KeyError" in verdict and "line 2, in helper" in verdict and "KeyError: 'missing'" in verdict
        assert "bpe_tui" not in verdict and "runner" not in verdict
        assert "reading" in text_of(check.query_one("#printed"))
        await pilot.press("q")
    assert app.return_code == 2


async def test_an_encoder_that_differs_opens_the_encode_view_at_its_pre_token(tmp_path: Path) -> None:
    trainer = Trainer.from_files(CORPUS, 400, ["<|endoftext|>"])
    trainer.run()
    tokenizer = Tokenizer.from_trainer(trainer)
    target = Target.parse(f"{STUDENTS / 'ignores_specials.py'}:Tokenizer")
    check = CheckScreen(EncodingCheck(target, str(tmp_path), tokenizer))
    app = BpeApp(check)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, EncodeScreen), limit=60)
        view = app.screen
        assert isinstance(view, EncodeScreen)
        shown = str(view.query_one("#status").render())
        assert shown.startswith("check: your ids differ at token 0 · step 0/")
        assert view.walk.text.startswith("<|endoftext|><|endoftext|>one")
        await pilot.press("q")
        await wait_until(pilot, lambda: app.screen is check)
        await pilot.press("q")
    assert app.return_code == 1


# -- never from a browser ---------------------------------------------------------------------


async def test_a_served_app_never_runs_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a served app ever reach the check screen (serve refuses check), it says why and
    runs nothing."""
    monkeypatch.setattr(BpeApp, "is_web", property(lambda app: True))
    check = training_check("right_trainer.py")
    app = BpeApp(check)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        assert check.verdict is None and not list(app.workers)
        assert NOT_SERVED in text_of(check.query_one("#check-phase"))


def test_no_other_screen_offers_to_check_a_file() -> None:
    """Only the check screen runs a student's file, and only the check command opens it: no
    key or command of another screen (each of which bpe-tui serve can serve) leads there."""
    for name, screen in SCREENS_BY_NAME.items():
        if screen is CheckScreen:
            continue
        for binding in screen.BINDINGS:
            assert isinstance(binding, Binding)
            words = f"{binding.action} {binding.description} {binding.tooltip}".lower()
            assert "check" not in words and "python" not in words, (name, binding)
    for binding in BpeApp.BINDINGS:
        assert isinstance(binding, Binding) and "check" not in binding.action


async def test_the_palette_of_a_training_screen_offers_no_check() -> None:
    app = BpeApp(TrainScreen(CORPUS, OPTIONS, label=CORPUS.name))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, app.screen, 0)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert titles and not any("check" in title.lower() for title in titles)


# -- a picture --------------------------------------------------------------------------------


def checked_training_app() -> BpeApp:
    """The training screen as the check opens it on tie_flipped.py (the difference found here,
    without running the student's process, so the picture is the same every time)."""
    trainer = Trainer.from_files(CORPUS, 300, ["<|endoftext|>"])
    trainer.run()
    merges = list(trainer.merges)
    merges[6] = (b" ", b"f")
    difference = check_training(trainer, trainer.vocab, merges)
    return BpeApp(TrainScreen(CORPUS, OPTIONS, label=CORPUS.name, check=difference))  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_the_marks(snap_compare, size) -> None:
    async def run_before(pilot) -> None:
        await at_merge(pilot, pilot.app.screen, 6)

    assert snap_compare(checked_training_app(), terminal_size=size, run_before=run_before)


def test_the_verdict_lines_wrap_under_their_labels() -> None:
    from bpe_tui.check.verdict import Detail, plain_lines, shown

    lines = [Text("head"), Detail("why", Text("because"))]
    assert [line.plain for line in plain_lines(lines)] == ["head", "  why       because"]
    assert shown(lines) is not None
