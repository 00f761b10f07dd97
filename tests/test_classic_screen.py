"""Classic BPE on the training screen: the same panels, string tokens with ``</w>``."""

from __future__ import annotations

import json

from bpe_tui.train.screen import TrainScreen
from bpe_tui.train.widgets.corpus_words import CorpusWords
from bpe_tui.train.widgets.heap_stats import HeapStats
from bpe_tui.train.widgets.merge_changes import MergeChanges
from bpe_tui.train.widgets.pair_table import PairTable
from tests.test_train_screen import status
from tests.train_app import TOY_MERGES, at_merge, classic_app, train_app, wait_until


def shown(widget) -> str:
    return str(widget.render())


def pair_names(snapshot) -> list[str]:
    return ["|".join(snapshot.pair(pair)) for pair, _ in snapshot.top_pairs]


async def test_opens_at_merge_zero_on_the_three_way_tie():
    app, screen = classic_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        assert f"merge 0/{TOY_MERGES}" in status(screen) and "0.83 chars/token" in status(screen)
        assert pair_names(screen.snapshot)[:3] == ["e|s", "s|t", "t|</w>"]
        assert [count for _, count in screen.snapshot.top_pairs[:3]] == [9, 9, 9]
        assert "= tie, first seen wins: 3 at 9" in shown(screen.query_one(PairTable))
        assert "n|e|w|e|s|t|</w>" in shown(screen.query_one(CorpusWords))


async def test_three_merges_make_est_end_of_word():
    app, screen = classic_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n", "n")
        await at_merge(pilot, screen, 3)
        snapshot = screen.snapshot
        assert snapshot.last.token == "est</w>" and snapshot.last.count == 9
        assert [token for _, token, _ in snapshot.newest] == ["est</w>", "est", "es"]
        assert {w.text: w.parts for w in snapshot.words}["newest"] == ["n", "e", "w", "est</w>"]
        lost = {"|".join(snapshot.pair(c.pair)): (c.before, c.after) for c in snapshot.last.changes}
        assert lost == {"w|est": (6, 0), "w|est</w>": (0, 6), "d|est": (3, 0), "d|est</w>": (0, 3)}
        await pilot.press("b")
        await at_merge(pilot, screen, 2)
        assert screen.snapshot.last.token == "est"


async def test_go_to_a_tie_among_every_pair_left():
    """At merge 12 the three pairs left are tied: all of them, no more beyond the rows."""
    app, screen = classic_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("g", "1", "2", "enter")
        await at_merge(pilot, screen, 12)
        assert pair_names(screen.snapshot) == ["low|e", "e|r", "r|</w>"]
        assert "= tie, first seen wins: 3 at 2" in shown(screen.query_one(PairTable))


async def test_to_the_end_then_save_the_classic_model(tmp_path):
    app, screen = classic_app(out=str(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("f")
        await wait_until(pilot, lambda: screen.snapshot.finished and not screen.playing)
        assert screen.snapshot.merges_done == 15 and "stopped early" in status(screen)
        assert all(len(w.parts) == 1 for w in screen.snapshot.words)
        assert "no pairs left after merge 15" in shown(screen.query_one(MergeChanges))
        assert "no pairs left after merge 15" in shown(screen.query_one(HeapStats))
        await pilot.press("s")
        await wait_until(pilot, lambda: (tmp_path / "classic_bpe.json").exists())
    model = json.loads((tmp_path / "classic_bpe.json").read_text(encoding="utf-8"))
    assert model["merges"][:3] == [["e", "s"], ["es", "t"], ["est", "</w>"]] and len(model["merges"]) == 15


async def test_no_encode_view_for_classic():
    """The encode view steps through byte-level tokenizers: ``e`` is not offered."""
    app, screen = classic_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        keys = screen.active_bindings
        assert "n" in keys and "s" in keys and "e" not in keys
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "step (n)" in titles and not any(t.startswith("encode") for t in titles)
        await pilot.press("e")
        await pilot.pause(0.2)
        assert app.screen is screen


async def test_from_the_palette_over_the_training_screen_and_back():
    app, train = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, train, 0)
        assert "Classic BPE (</w>) on this corpus" in [c.title for c in app.get_system_commands(train)]
        app.action_classic()
        await pilot.pause()
        classic = app.screen
        assert isinstance(classic, TrainScreen) and classic.options.classic == "whitespace"
        assert classic.inputs == train.inputs
        await at_merge(pilot, classic, 0)
        assert "Classic BPE (</w>) on this corpus" not in [c.title for c in app.get_system_commands(classic)]
        assert "Race: recount vs optimized" in [c.title for c in app.get_system_commands(classic)]
        await pilot.press("n")
        await at_merge(pilot, classic, 1)
        await pilot.press("q")  # back to the byte-level training screen, which goes on
        await wait_until(pilot, lambda: app.screen is train)
        await pilot.press("n")
        await at_merge(pilot, train, 1)
