"""The Unigram encode view driven through Pilot: each word's lattice and the Viterbi best
path through it, position by position; the path the walk reads back is the engine's, and
the tokens at the end are ``encode``'s; back, words, editing, help; opened from the model's
files and from Unigram's training screen; SVG snapshots mid-encode."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from textual.widgets import Static, TextArea

from bpe_tui.app import BpeApp, encode_screen, encoding_help
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.encode.lattice import LatticeWalk
from bpe_tui.encode.unigram_screen import UnigramEncodeScreen
from bpe_tui.encode.widgets.best_scores import BestScores
from bpe_tui.encode.widgets.lattice_pieces import LatticePieces
from bpe_tui.help.command import run_explain
from bpe_tui.help.screen import HelpScreen
from engine.encode.unigram import UnigramTokenizer
from engine.train.unigram.trainer import UnigramTrainer
from tests.test_encode_screen import ids_on_screen
from tests.test_help import help_lines
from tests.test_unigram_screen import shown

CORPUS_EN = Path(__file__).parent / "fixtures" / "corpus.en"
TEXT = "<unk> Tokenization of unaffable words: 孙悟空 and naïve."
"""An added token written in the text, a long word, a rare one, Chinese the English model has
no piece for (three unknown characters: one <unk>), punctuation on its word and an accent."""


@pytest.fixture(scope="module")
def tokenizer() -> UnigramTokenizer:
    """corpus.en trained to 1,000 pieces."""
    trainer = UnigramTrainer.from_file(CORPUS_EN, 1000)
    trainer.run()
    return UnigramTokenizer.from_trainer(trainer)


def status(app: BpeApp) -> str:
    return str(app.screen.query_one("#status", Static).render())


def shown_ids(app: BpeApp) -> list[int]:
    return ids_on_screen(app.screen.query_one(TokenSpans))


def test_the_walks_back_pointers_read_back_the_engines_best_path(tokenizer: UnigramTokenizer) -> None:
    """The Viterbi laid out position by position picks, at every word, the path
    ``encode_steps`` chose, with its score; its ids are ``encode``'s."""
    texts = [TEXT, "the  quick brown fox", "▁already▁spaced", "aaaaaaaa", "", "<unk>", "x" * 40]
    for text in texts:
        walk = LatticeWalk(tokenizer, text)
        assert walk.ids == tokenizer.encode(text)
        for wi, lattice in enumerate(walk.lattices):
            if lattice.special:
                continue
            viterbi = walk.viterbi[wi]
            assert walk.path(wi) == list(lattice.best)
            assert viterbi.best[-1] == pytest.approx(lattice.score, abs=1e-9)
            assert viterbi.best[0] == 0.0
            for end, ending in enumerate(viterbi.ending):
                assert all(lattice.nodes[k].end == end for k in ending)
                if end:  # the best score there is the best of the pieces ending there
                    assert viterbi.best[end] == max(viterbi.total(lattice, k) for k in ending)


async def test_position_by_position_to_the_end_is_the_encode(tokenizer: UnigramTokenizer) -> None:
    """Each n fills one position (or reads a word's path back); the tokens shown are those
    made so far, a word's once its path is read, and at the end ``encode``'s."""
    app = BpeApp(UnigramEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, UnigramEncodeScreen)
        walk = screen.walk
        words = [lattice.word for lattice in walk.lattices if not lattice.special]
        assert walk.total == sum(len(word) + 1 for word in words)
        assert status(app).startswith(f"step 0/{walk.total} ") and "“▁Tokenization”" in status(app)
        assert shown_ids(app) == [tokenizer.unk_id]  # the added token, cut out first
        for k in range(1, walk.total + 1):
            await pilot.press("n")
            assert status(app).startswith(f"step {k}/{walk.total} ")
            assert shown_ids(app) == [i for i, _ in walk.tokens(k)]
        assert shown_ids(app) == tokenizer.encode(TEXT) == walk.ids
        assert "done: " in status(app) and "“▁naïve.”: path" in status(app)
        await pilot.press("n")  # nothing past the end
        assert screen.at == walk.total


async def test_a_position_shows_its_candidates_and_the_best(tokenizer: UnigramTokenizer) -> None:
    """At position j the lattice lights the pieces ending at j with their totals and marks
    the best; the Viterbi's row j has that best score and its back-pointer."""
    app = BpeApp(UnigramEncodeScreen(tokenizer, "Tokenization"))
    async with app.run_test(size=(120, 48)) as pilot:
        screen = app.screen
        assert isinstance(screen, UnigramEncodeScreen)
        walk = screen.walk
        lattice, viterbi = walk.lattices[0], walk.viterbi[0]
        assert lattice.word == "▁Tokenization" and viterbi is not None
        lines = shown(screen.query_one(LatticePieces)).splitlines()
        listed = [line.split()[:3] for line in lines[1:]]
        by_end = sorted(lattice.nodes, key=lambda n: (n.end, n.start))
        assert listed == [[f"{n.start}–{n.end}", n.piece, f"{n.log_prob:.2f}"] for n in by_end]  # every candidate
        for j in range(1, len(lattice.word) + 1):
            await pilot.press("n")
            back = lattice.nodes[viterbi.back[j]]
            assert f"position {j}/{len(lattice.word)}: best {viterbi.best[j]:.2f} by {back.piece} from {back.start}" in status(app)
            lines = shown(screen.query_one(LatticePieces)).splitlines()
            best_row = next(line for line in lines if "◀ best" in line)
            assert best_row.split()[:4] == [f"{back.start}–{back.end}", back.piece, f"{back.log_prob:.2f}", f"{viterbi.best[j]:.2f}"]
            row = next(line.split() for line in shown(screen.query_one(BestScores)).splitlines() if line.split()[:1] == [str(j)])
            assert row[2:5] == [f"{viterbi.best[j]:.2f}", back.piece, "from"]
        await pilot.press("n")
        path = [lattice.nodes[k] for k in lattice.best]
        assert f"path {'|'.join(n.piece for n in path)}, log p {lattice.score:.2f}" in status(app)
        marked = [line.split()[1] for line in shown(screen.query_one(LatticePieces)).splitlines() if "★ path" in line]
        assert sorted(marked) == sorted(n.piece for n in path)


async def test_back_words_start_and_end(tokenizer: UnigramTokenizer) -> None:
    app = BpeApp(UnigramEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, UnigramEncodeScreen)
        walk = screen.walk
        await pilot.press("w")
        first = len(walk.lattices[1].word) + 1  # ▁Tokenization: its positions, then its path
        assert screen.at == first and "“▁Tokenization”: path" in status(app)
        assert shown_ids(app) == [tokenizer.unk_id, *walk.lattices[1].ids]
        await pilot.press("w")
        assert screen.at == first + len("▁of") + 1
        await pilot.press("p")
        assert screen.at == first + len("▁of") and "position 3/3" in status(app)
        await pilot.press("e")
        assert screen.at == walk.total and shown_ids(app) == tokenizer.encode(TEXT)
        await pilot.press("home")
        assert screen.at == 0 and shown_ids(app) == [tokenizer.unk_id]


async def test_unknown_characters_next_to_each_other_are_one_unk(tokenizer: UnigramTokenizer) -> None:
    app = BpeApp(UnigramEncodeScreen(tokenizer, "孙悟空"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("w")
        assert "path ▁|孙|悟|空" in status(app) and "one <unk>" in status(app)
        space = next(i for i, (piece, _) in enumerate(tokenizer.vocab) if piece == "▁")
        assert shown_ids(app) == tokenizer.encode("孙悟空") == [space, tokenizer.unk_id]


async def test_editing_encodes_again(tokenizer: UnigramTokenizer) -> None:
    app = BpeApp(UnigramEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, UnigramEncodeScreen)
        await pilot.press("slash")
        area = screen.query_one("#text", TextArea)
        assert app.focused is area
        area.text = "hello world"
        await pilot.pause()
        assert shown_ids(app) == tokenizer.encode("hello world") and screen.at == screen.walk.total
        await pilot.press("escape")
        assert isinstance(app.focused, TokenSpans)
        await pilot.press("home", "n")
        assert "“▁hello” position 1/6" in status(app)


async def test_opened_on_a_saved_model(tokenizer: UnigramTokenizer, tmp_path: Path) -> None:
    """``bpe-tui encode --model DIR`` opens the view of the model's kind: a saved Unigram
    model opens this one, and encodes as the tokenizer it was saved from."""
    tokenizer.save_dir(tmp_path)
    view = encode_screen(UnigramTokenizer.load(tmp_path), TEXT)
    assert isinstance(view, UnigramEncodeScreen)
    app = BpeApp(view)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("e")
        assert shown_ids(app) == tokenizer.encode(TEXT)
        assert app.screen.check_action("quit_app", ()) and not app.screen.check_action("back", ())


async def test_help_and_explain_say_the_same(tokenizer: UnigramTokenizer, capsys) -> None:
    assert encoding_help("unigram") is UnigramEncodeScreen
    app = BpeApp(UnigramEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(84, 120)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.query_one("#help").border_title == "help: the encode view: Unigram"
        on_screen = [line.rstrip() for line in help_lines(app)]
    text = " ".join(on_screen)
    for words in ("概率", "Viterbi", "全局", "贪心", "▁", "back-pointer", LatticePieces.BORDER_TITLE, BestScores.BORDER_TITLE):
        assert words in text
    run_explain(argparse.Namespace(screen="encode", algorithm="unigram"))
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert printed[0] == "bpe-tui encode: the encode view: Unigram"
    assert printed[2:] == on_screen


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_unigram_encode_inside_a_word(snap_compare, tokenizer: UnigramTokenizer, size) -> None:
    """Inside ▁unaffable, five positions filled: the pieces ending at position 5 lit, the
    best (f from 4) marked."""

    async def run_before(pilot) -> None:
        await pilot.press("w", *"n" * 9)

    app = BpeApp(UnigramEncodeScreen(tokenizer, TEXT))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_unigram_encode_path_read_back(snap_compare, tokenizer: UnigramTokenizer, size) -> None:
    """▁Tokenization's path read back from its end, its pieces marked."""

    async def run_before(pilot) -> None:
        await pilot.press("w", "w")

    app = BpeApp(UnigramEncodeScreen(tokenizer, TEXT))
    assert snap_compare(app, terminal_size=size, run_before=run_before)
