"""WordPiece on the training screen: pairs ranked by score beside BPE's choice, the last
merge's score and counts, its own help; the keys of classic BPE, byte-level views off."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bpe_tui.app import BpeApp
from bpe_tui.help.command import run_explain
from bpe_tui.help.screen import HelpScreen
from bpe_tui.train.screen import TrainScreen
from bpe_tui.train.widgets.pair_scores import PairScores, short_score
from bpe_tui.train.widgets.score_heap import ScoreHeapStats
from bpe_tui.train.widgets.scored_merge import ScoredMerge
from engine.train.settings import TrainOptions
from engine.train.wordpiece.events import WordPieceStep
from engine.train.wordpiece.rule import SPECIAL_TOKENS
from engine.train.wordpiece.trainer import WordPieceTrainer
from tests.test_help import help_lines
from tests.test_train_screen import status
from tests.train_app import after, at_merge, wait_until

LECTURE = "hug " * 10 + "pug " * 5 + "pun " * 12 + "bun " * 4 + "hugs " * 5
"""Lecture 002's words and counts: BPE merges u+g first (20), WordPiece g+s (score 1/20)."""
VOCAB = 30
CORPUS_EN = Path(__file__).parent / "fixtures" / "corpus.en"


def wordpiece_app(path: Path, vocab_size: int = VOCAB, out: str | None = None) -> tuple[BpeApp, TrainScreen]:
    options = TrainOptions(vocab_size, SPECIAL_TOKENS, algorithm="wordpiece")
    screen = TrainScreen(path, options, out=out, label=path.name)
    return BpeApp(screen), screen


@pytest.fixture
def lecture(tmp_path: Path) -> Path:
    path = tmp_path / "hug.txt"
    path.write_text(LECTURE, encoding="utf-8")
    return path


def trainer_at(path: Path, k: int, vocab_size: int = VOCAB) -> WordPieceTrainer:
    trainer = WordPieceTrainer.from_file(path, vocab_size)
    trainer.goto(k)
    return trainer


def shown(widget) -> str:
    return str(widget.render())


def named(trainer: WordPieceTrainer, pair: tuple[int, int]) -> str:
    return f"{trainer.token(pair[0])}|{trainer.token(pair[1])}"


def check_against(screen: TrainScreen, trainer: WordPieceTrainer) -> None:
    """The pair table's top row and BPE row are the trainer's, at the same merge."""
    snapshot = screen.snapshot
    (pair, count), bpe = trainer.top_pairs(1)[0], trainer.bpe_choice()
    assert snapshot.top_pairs[0] == (pair, count)
    assert [pair for pair, _ in snapshot.top_pairs] == [pair for pair, _ in trainer.top_pairs(len(snapshot.top_pairs))]
    assert bpe is not None and snapshot.likelihood.bpe_choice == bpe
    lines = shown(screen.query_one(PairScores)).splitlines()
    a, b = (trainer.symbol_count(i) for i in pair)
    score = short_score(snapshot.likelihood.score(pair, count))
    assert lines[1].split() == ["1", named(trainer, pair), score, str(count), str(a), str(b)]
    bpe_row = next(line for line in lines if line.split()[:1] == ["BPE"])
    bpe_a, bpe_b = (trainer.symbol_count(i) for i in bpe[0])
    assert bpe_row.split()[1:] == [
        named(trainer, bpe[0]),
        short_score(snapshot.likelihood.score(*bpe)),
        str(bpe[1]),
        str(bpe_a),
        str(bpe_b),
    ]


async def test_opens_on_the_lecture_example_likelihood_against_frequency(lecture):
    """At merge 0 WordPiece's top pair is ##g|##s (5/(20·5) = 1/20); BPE's would be ##u|##g (20/(36·20))."""
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        assert f"merge 0/{VOCAB - 12}" in status(screen) and "chars/token" in status(screen)
        check_against(screen, trainer_at(lecture, 0))
        table = shown(screen.query_one(PairScores))
        assert "##g|##s" in table.splitlines()[1] and "5.00e-2" in table.splitlines()[1]
        assert "BPE: most frequent, lower score" in table
        assert "h|##u|##g|##s" in shown(screen.query_one("#words"))


async def test_steps_back_and_go_to_agree_with_the_trainer(lecture):
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n", "n")
        await at_merge(pilot, screen, 3)
        check_against(screen, trainer_at(lecture, 3))
        step = screen.snapshot.last
        assert isinstance(step, WordPieceStep) and step.token == "hu"
        merge = shown(screen.query_one(ScoredMerge))
        assert "#3 h + ##u → hu" in merge and "score 15/(15·19) ≈ 5.26e-2" in merge
        assert "h 15→0" in merge and "##u 19→4" in merge and "hu 0→15" in merge
        assert "BPE would merge it too" in merge  # h|##u is also the most frequent pair now

        await pilot.press("b")
        await at_merge(pilot, screen, 2)
        check_against(screen, trainer_at(lecture, 2))
        assert screen.snapshot.last.token == "pu"

        await pilot.press("g", "1", "enter")
        await at_merge(pilot, screen, 1)
        check_against(screen, trainer_at(lecture, 1))
        merge = shown(screen.query_one(ScoredMerge))
        assert "#1 ##g + ##s → ##gs" in merge and "score 5/(20·5) ≈ 5.00e-2" in merge
        assert "beat BPE's ##u|##g ≈ 2.78e-2" in merge  # 20/(36·20) = 1/36

        await pilot.press("g", "7", "enter")
        await at_merge(pilot, screen, 7)
        check_against(screen, trainer_at(lecture, 7))


async def test_the_last_merge_in_full_and_the_stale_pops_it_dropped(lecture):
    """Wide, the last merge names the rule and the counts of the BPE pair it beat; the
    heap panel says stale entries are dropped, never re-pushed."""
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(160, 48)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n")
        await at_merge(pilot, screen, 2)
        merge = shown(screen.query_one(ScoredMerge))
        assert "score = count(ab)/(count(a)·count(b)) = 17/(17·36) = 1/36 ≈ 2.78e-2" in merge
        assert "symbol counts: p 17→0 ##u 36→19 pu 0→17" in merge
        heap = shown(screen.query_one(ScoreHeapStats))
        assert "popped 1 stale, each dropped" in heap
        assert "stale ##u|##g  entry of count(ab) 20, now 15: a fresh entry holds it" in heap
        await pilot.press("g", "4", "enter")
        await at_merge(pilot, screen, 4)
        merge = shown(screen.query_one(ScoredMerge))
        assert "#4 b + ##u → bu" in merge and "= 4/(4·4) = 1/4 ≈ 2.50e-1" in merge
        assert "beat the pair BPE's rule (most frequent) would merge: pu|##n\n  12/(17·16) ≈ 4.41e-2, lower" in merge


async def test_to_the_end_then_save(lecture, tmp_path):
    out = tmp_path / "model"
    app, screen = wordpiece_app(lecture, out=str(out))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("f")
        await wait_until(pilot, lambda: screen.snapshot.finished and not screen.playing)
        done = screen.snapshot.merges_done
        assert done == trainer_at(lecture, VOCAB).merges_done
        await pilot.press("s")
        await wait_until(pilot, lambda: (out / "tokenizer.json").exists() and (out / "vocab.txt").exists())
    vocab = (out / "vocab.txt").read_text(encoding="utf-8").split()
    assert vocab[:5] == list(SPECIAL_TOKENS) and "hugs" in vocab
    assert json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))["model"]["type"] == "WordPiece"


async def test_trace_of_the_merges_so_far(lecture, tmp_path, monkeypatch):
    """``t`` exports the merges so far, with WordPiece's rule as the tie-break."""
    monkeypatch.chdir(tmp_path)  # a short name to type
    trace = tmp_path / "merges.json"
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("g", "3", "enter")
        await at_merge(pilot, screen, 3)
        await pilot.press("t", "ctrl+u", *"merges.json", "enter")
        await wait_until(pilot, lambda: trace.exists())
        await at_merge(pilot, screen, 3)  # the trainer redid its merges and is back where it was
    written = json.loads(trace.read_text(encoding="utf-8"))
    assert written["tie_break"].startswith("the higher score count(ab)/(count(a)·count(b))")
    assert [(m["left"], m["right"], m["token"]) for m in written["merges"]] == [
        ("##g", "##s", "##gs"),
        ("p", "##u", "pu"),
        ("h", "##u", "hu"),
    ]


async def test_byte_level_views_are_not_offered(lecture):
    """The comparison with this tokenizer, the pair in the corpus, followed words and raw
    bytes are byte-level BPE's: their keys do nothing here. (``e`` opens WordPiece's own
    encode view: tests/test_wordpiece_encode_screen.py.)"""
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        keys = screen.active_bindings
        assert {"n", "space", "f", "g", "b", "s", "e", "q"} <= set(keys)
        assert not {"c", "o", "w", "x"} & set(keys)
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "step (n)" in titles and "encode (e)" in titles
        assert not any(t.startswith(("compare (c)", "pair (o)", "follow")) for t in titles)
        await pilot.press("o", "w", "x", "c")
        await pilot.pause(0.2)
        assert app.screen is screen and not screen.has_class("-occurrences")
        app.action_race()  # the race is byte-level: it says so, and races on the bundled sample
        await pilot.pause()
        assert any("not WordPiece" in str(n.message) for n in app._notifications)
        assert screen.options.algorithm == "wordpiece"


async def test_help_explains_wordpiece_in_the_lectures_words(lecture):
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(84, 130)) as pilot:  # 80 columns inside the frame, as explain prints
        await at_merge(pilot, screen, 0)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.query_one("#help").border_title == "help: the training screen: WordPiece"
        lines = help_lines(app)
    text = " ".join(lines)
    for words in ("似然", "likelihood", "count(ab) / (count(a) × count(b))", "tie", "##", "BPE", "frequency"):
        assert words in text
    for title in (PairScores.BORDER_TITLE, ScoredMerge.BORDER_TITLE, ScoreHeapStats.BORDER_TITLE):
        assert title in lines
    keys = {line.split()[0] for line in lines[lines.index("keys") + 1 :]}
    assert {"n", "␣", "f", "g", "b", "s", "e", "t", "q", "?"} <= keys and not {"c", "o", "w", "x"} & keys


def test_explain_train_for_wordpiece(capsys):
    """``bpe-tui explain train --algorithm wordpiece`` prints what ``?`` shows on its screen."""
    run_explain(argparse.Namespace(screen="train", algorithm="wordpiece"))
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "bpe-tui train: the training screen: WordPiece"
    assert "似然" in " ".join(printed) and PairScores.BORDER_TITLE in printed
    keys = [line.split()[0] for line in printed[printed.index("keys") + 1 :]]
    assert keys == ["n", "␣", "+", "-", "f", "g", "b", "s", "e", "t", "p", "q", "?", "ctrl+p"]


async def test_explain_and_the_help_screen_say_the_same(lecture, capsys):
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(84, 130)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("question_mark")
        on_screen = [line.rstrip() for line in help_lines(app)]
    run_explain(argparse.Namespace(screen="train", algorithm="wordpiece"))
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert printed[2:] == on_screen


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_wordpiece_after_three_merges(snap_compare, size):
    """corpus.en at vocab 400: rare pairs of rare parts first, while BPE would merge t|##h."""
    app, _ = wordpiece_app(CORPUS_EN, 400)
    assert snap_compare(app, terminal_size=size, run_before=after("n", "n", "n", merge=3))
