"""The pair in the corpus (``o``) and the vocabulary plot, driven as a user would."""

from __future__ import annotations

import pytest

from bpe_tui.train.widgets import vocab_growth
from bpe_tui.train.widgets.growth_plot import GrowthPlot, nice_ticks, per_token, short_number
from bpe_tui.train.widgets.pair_in_corpus import PairInCorpus
from tests.train_app import SAMPLE_MERGES, after, at_merge, train_app, wait_until


def shown(screen) -> str:
    panel = screen.query_one(PairInCorpus)
    assert panel.display and panel.region.height > 0
    return str(panel.render())


async def test_o_shows_where_the_next_pair_lies_and_what_the_merge_did():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        assert screen.snapshot.upcoming is None  # not sampled while hidden
        await pilot.press("o")
        await wait_until(pilot, lambda: screen.snapshot.upcoming is not None)
        upcoming = screen.snapshot.upcoming
        assert upcoming.pair == screen.snapshot.top_pairs[0][0]
        assert upcoming.live == upcoming.recorded  # nothing merged yet: nothing stale
        text = shown(screen)
        assert "next merge h + e" in text and "[1 T]↔[2 h]↔[3 e]" in text  # the first word, "The"
        await pilot.press("n")
        await at_merge(pilot, screen, 1)
        merged = screen.snapshot.merged
        assert merged is not None and merged.before.pair == screen.snapshot.last.pair == upcoming.pair
        assert merged.before.occurrences == upcoming.occurrences
        text = shown(screen)
        assert "last merge #1 h + e → he" in text
        assert "before [1 T]↔[2 h]↔[3 e]" in text and "after  [1 T]↔[2 he]" in text
        await pilot.press("o")
        assert not screen.query_one(PairInCorpus).display
        await wait_until(pilot, lambda: screen.snapshot.upcoming is None)
        assert screen.snapshot.last is not None  # hiding the panel keeps the last merge on the others
        await pilot.press("n")
        await at_merge(pilot, screen, 2)
        assert screen.snapshot.upcoming is None and screen.snapshot.merged is None


async def test_shown_after_merges_it_replays_the_last_one_and_marks_stale_positions():
    app, screen = train_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("g", *"40", "enter")
        await at_merge(pilot, screen, 40)
        await pilot.press("o")
        await wait_until(pilot, lambda: screen.snapshot.merged is not None)
        assert screen.snapshot.merges_done == 40 and screen.snapshot.last.index == 40
        upcoming = screen.snapshot.upcoming
        assert upcoming.stale > 0  # "o r": the "o" of " or" went into " o" first
        text = shown(screen)
        assert f"{upcoming.recorded} recorded, {upcoming.live} live, {upcoming.stale} stale" in text
        assert "␣or ×1         [390 ␣o]↔[392 r]  391 stale (merged into the cell before)" in text
        assert "last merge #40" in text


async def test_a_a_a_is_merged_once_and_the_second_position_skipped(tmp_path):
    from bpe_tui.app import BpeApp
    from bpe_tui.train.screen import TrainScreen
    from engine.train.settings import TrainOptions

    corpus = tmp_path / "aaa.txt"
    corpus.write_text("aaa", encoding="utf-8")
    screen = TrainScreen(corpus, TrainOptions(258, ()), label="aaa.txt")
    app = BpeApp(screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("o", "n")
        await at_merge(pilot, screen, 1)
        text = shown(screen)
        assert "before [1 a]↔[2 a]↔[3 a]" in text
        assert "after  [1 aa]↔[3 a]  2 skipped (its token went into 1)" in text


async def test_the_plot_keeps_up_with_fast_forward():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        plot = screen.query_one(GrowthPlot)
        await pilot.press("f")
        await at_merge(pilot, screen, SAMPLE_MERGES)  # waits for the plot's last drawing too
        assert plot.drawn_merges == SAMPLE_MERGES
        drawn = plot.plt.build()
        assert "600" in drawn and "1k" in drawn  # merge axis and the log count axis


async def test_without_plotext_the_sparkline_stays_and_says_how_to_get_plots(monkeypatch):
    monkeypatch.setattr(vocab_growth, "GrowthPlot", None)
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        assert not screen.query("GrowthPlot")
        assert screen.query_one("#plot-hint").render().plain == "pip install 'bpe-tui[plot]' for plots"
        await pilot.press("n")
        await at_merge(pilot, screen, 1)
        assert screen.query_one("#winning-counts").data


def test_plot_helpers():
    assert per_token(10, [2, 3]) == [1.0, 10 / 8, 10 / 5]
    assert nice_ticks(743, 5) == [0, 200, 400, 600]
    assert nice_ticks(1, 5) == [0, 1] and nice_ticks(10_000, 5) == [0, 5000, 10_000]
    assert [short_number(10**d) for d in range(7)] == ["1", "10", "100", "1k", "10k", "100k", "1M"]


# -- SVG snapshots ------------------------------------------------------------------------


SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])


@SIZES
def test_snapshot_pair_in_corpus_after_three_merges(snap_compare, size):
    """`` the`` forms: ``␣t`` and ``he`` become one cell in every word, links rewired."""
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=after("o", "n", "n", "n", merge=3))


@SIZES
def test_snapshot_pair_in_corpus_with_stale_positions(snap_compare, size):
    """Before merge 41 (``o r``), positions of ``o r`` that earlier merges took are stale."""
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=after("o", "g", "4", "0", "enter", merge=40))


@SIZES
def test_snapshot_plot_at_the_end(snap_compare, size):
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=after("f", merge=SAMPLE_MERGES))


@SIZES
def test_snapshot_without_plotext(snap_compare, size, monkeypatch):
    monkeypatch.setattr(vocab_growth, "GrowthPlot", None)
    app, _ = train_app()
    assert snap_compare(app, terminal_size=size, run_before=after("n", "n", "n", merge=3))
