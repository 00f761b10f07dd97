"""SVG snapshots of the help over the training screen, the encode view, the compare view
and the race.

Deterministic as each screen's own snapshots are: the trainer idle at merge 0, the compare
view's fixed text and sample tokenizers, the race over with ticking clocks, before ``?``.
"""

from __future__ import annotations

import pytest

from bpe_tui.app import BpeApp
from bpe_tui.compare.screen import CompareScreen
from bpe_tui.encode.screen import EncodeScreen
from engine import Tokenizer
from tests.race_app import TICKING, frozen, race_app, race_over
from tests.test_compare_snapshots import ladder, steady
from tests.test_encode_screen import TEXT, tokenizer  # noqa: F401  (the fixture)
from tests.train_app import at_merge, train_app


async def help_at_merge_0(pilot) -> None:
    await at_merge(pilot, pilot.app.screen, 0)
    await pilot.press("question_mark")


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_training_help(snap_compare, size):
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=help_at_merge_0)


def test_training_help_scrolled_to_the_keys_80x24(snap_compare):
    async def to_the_keys(pilot) -> None:
        await help_at_merge_0(pilot)
        await pilot.press("end")

    app, _ = train_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=to_the_keys)


def test_encode_help_200x50(snap_compare, tokenizer: Tokenizer) -> None:  # noqa: F811
    assert snap_compare(BpeApp(EncodeScreen(tokenizer, TEXT)), press=["question_mark"], terminal_size=(200, 50))


def test_compare_help_80x24(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await steady(pilot)
        await pilot.press("escape", "question_mark")  # out of the text box, where ? is text

    app = BpeApp(CompareScreen(ladder(), reference=3))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_race_help_80x24(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await race_over(pilot, pilot.app.screen)
        await pilot.press("question_mark")

    app, _ = race_app(TICKING, frozen)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
