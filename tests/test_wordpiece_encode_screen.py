"""The WordPiece encode view driven through Pilot: 最长匹配 match by match and lookup by
lookup, [UNK] and why, added tokens cut out first, back, help; opened from the command and
from the WordPiece training screen; SVG snapshots mid-encode."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Static, TextArea

from bpe_tui.app import BpeApp, encode_screen
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.encode.command import prepare
from bpe_tui.encode.longest_match import LongestMatchWalk
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.encode.widgets.lookups import Lookups
from bpe_tui.encode.widgets.word_spans import WordSpans
from bpe_tui.encode.wordpiece_screen import WordPieceEncodeScreen
from bpe_tui.help.command import run_explain
from bpe_tui.help.screen import HelpScreen
from bpe_tui.train.screen import TrainScreen
from engine import Tokenizer, Trainer
from engine.encode.wordpiece import WordPieceTokenizer
from engine.train.wordpiece.trainer import WordPieceTrainer
from tests.test_encode_screen import CORPUS, ids_on_screen, on_screen, spans_on_screen
from tests.test_help import help_lines
from tests.test_wordpiece_screen import lecture, wordpiece_app  # noqa: F401  (the fixture)
from tests.train_app import at_merge, wait_until

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PIECES = ["un", "##aff", "##able", "##af", "hug", "##s", "n", "##a", "!", "h", "##u", "##g"]
TEXT = "[CLS] Unaffable hugs naïve! Supercalifragilistic [SEP]"
"""BERT's unaffable (un ##aff ##able), a word whose rest no piece starts (naïve: n ##a,
then ##ïve) and a word longer than the limit (12 characters here), between added tokens."""


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer(SPECIALS + PIECES, SPECIALS, max_input_chars_per_word=12, lowercase=True)


def status(app: BpeApp) -> str:
    return str(app.screen.query_one("#status", Static).render())


def lookups(app: BpeApp) -> str:
    """What the longest-match panel says, its candidates below."""
    panel = app.screen.query_one(Lookups)
    return "\n".join(on_screen(panel.query_one("#search")) + on_screen(panel.query_one("#candidates")))


def candidates(app: BpeApp) -> list[tuple[str, str]]:
    """The candidates listed, each with its mark: ✗ not found, ✓ taken, ? the next lookup."""
    lines = on_screen(app.screen.query_one(Lookups).query_one("#candidates"))
    return [(line.split()[0], line.split()[1]) for line in lines if line[:1] in "✗✓?"]


def shown_ids(app: BpeApp) -> list[int]:
    return ids_on_screen(app.screen.query_one(TokenSpans))


async def test_match_by_match_to_the_end_is_the_encode(tokenizer: WordPieceTokenizer) -> None:
    """Each n takes one piece (or finds a word [UNK]); the tokens shown are always those made
    so far, and at the end the model's encode."""
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        walk = screen.walk
        assert walk.total == 10  # un ##aff ##able hug ##s n ##a [UNK] ! [UNK]: a word found [UNK] is a move too
        assert status(app).startswith(f"step 0/{walk.total} ") and "matching “unaffable”" in status(app)
        assert shown_ids(app) == [2]  # [CLS] is cut out before any word is matched
        for k in range(1, walk.total + 1):
            await pilot.press("n")
            assert status(app).startswith(f"step {k}/{walk.total} ")
            assert shown_ids(app) == [i for i, _ in walk.tokens(screen.at)]
        assert screen.at == walk.lookups
        assert shown_ids(app) == tokenizer.encode(TEXT) == walk.ids
        assert f"done: {len(walk.ids)} tokens, 2 [UNK]" in status(app)
        tokens = spans_on_screen(screen.query_one(TokenSpans))[0].split()
        assert tokens[:6] == ["[CLS]", "un", "##aff", "##able", "hug", "##s"]


async def test_the_longest_candidate_first(tokenizer: WordPieceTokenizer) -> None:
    """unaffable: the candidates no longer than the longest entry, down to un; then
    ##affa ✗ ##aff ✓, where the next search starts at ##able."""
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("n")
        said = lookups(app)
        assert "at the word's start: unaffable" in said
        assert "(longer than 6 characters: no such entry)" in said  # unaffable has 9 characters, the longest entry 6
        assert candidates(app) == [("✗", "unaffa"), ("✗", "unaff"), ("✗", "unaf"), ("✗", "una"), ("✓", "un")]
        assert "✓ took un (id 5)" in said and "next search: ##affable" in said
        assert "took un (id 5) in “unaffable” · next search from ##affable" in status(app)
        await pilot.press("n")
        said = lookups(app)
        assert "at character 3, after un: ##affable" in said
        assert candidates(app) == [("✗", "##affa"), ("✓", "##aff")]
        await pilot.press("n")
        assert "the word is done: un ##aff ##able" in lookups(app)


async def test_one_lookup_at_a_time(tokenizer: WordPieceTokenizer) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        await pilot.pause()
        assert candidates(app) == [("?", "unaffa")]  # nothing looked up yet
        assert "next lookup" in lookups(app)
        await pilot.press("l", "l")
        assert screen.at == 2 and "lookup 2 of this search" in status(app)
        assert candidates(app) == [("✗", "unaffa"), ("✗", "unaff"), ("?", "unaf")]
        assert shown_ids(app) == [2]  # no piece taken yet
        await pilot.press("n")  # to the end of this search
        assert screen.at == 5 and shown_ids(app) == [2, 5]


async def test_an_unknown_word_says_why(tokenizer: WordPieceTokenizer) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        await pilot.press(*"nnnnn", "n", "n")  # un ##aff ##able hug ##s, then n ##a of naïve
        assert shown_ids(app)[-2:] == [11, 12]
        await pilot.press("n")
        said = " ".join(lookups(app).split())
        assert "no piece of the vocabulary starts ##ïve, not even ##ï alone: naïve is one [UNK] (id 1)" in said
        assert "and n ##a, taken before, are dropped." in said
        assert "✗ ##ï not in the vocabulary ◀ dead end" in said
        assert "“naïve” is [UNK]: no piece starts ##ïve" in status(app)
        assert shown_ids(app)[-2:] == [10, 1]  # ##s of hugs, then naïve as one [UNK]
        await pilot.press("n", "n")  # !, then a word too long: the last move
        said = " ".join(lookups(app).split())
        assert "the word has 20 characters, more than 12" in said and "without a single lookup" in said
        assert screen.at == screen.walk.lookups and "done: 10 tokens, 2 [UNK]" in status(app)
        await pilot.press("p")
        assert "“!” is" not in status(app) and "took ! (id 13)" in status(app)
        assert "“naïve” is [UNK]" not in status(app)


async def test_back_start_and_end(tokenizer: WordPieceTokenizer) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = app.screen
        walk = screen.walk
        await pilot.press("n", "n", "n")
        three = screen.at
        await pilot.press("p")
        assert screen.at == walk.moves[1].last and shown_ids(app) == [2, 5, 6]
        await pilot.press("n", "l", "b")  # back from part-way: to the end of the match before
        assert screen.at == three
        await pilot.press("p", "p", "p", "p")  # stays at the start
        assert screen.at == 0 and shown_ids(app) == [2]
        for end, start in (("e", "home"), ("f", "0")):
            await pilot.press(end)
            assert screen.at == walk.lookups and shown_ids(app) == tokenizer.encode(TEXT)
            await pilot.press("n", "l")  # nothing past the end
            assert screen.at == walk.lookups
            await pilot.press(start)
            assert screen.at == 0 and status(app).startswith(f"step 0/{walk.total} ")


async def test_the_text_marks_its_words(tokenizer: WordPieceTokenizer) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(100, 40)) as pilot:
        words = app.screen.query_one(WordSpans)
        assert words.border_title == "text: 5 words, 2 added tokens cut out first  (/ to edit)"
        await pilot.press("n")
        text = words.query_one("#words-text", Static).content
        assert isinstance(text, Text)
        taken = words.get_component_rich_style("word-spans--taken", partial=True)
        spans = {(s.start, s.end) for s in text.spans if s.style == taken}
        assert (6, 8) in spans  # Un of Unaffable, the piece taken


async def test_editing_re_encodes_at_once(tokenizer: WordPieceTokenizer) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, "hug"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await pilot.press("slash")
        assert isinstance(app.focused, TextArea) and screen.has_class("-editing")
        await pilot.press("end", "s", "space", "n", "a")  # typed, not stepping keys
        assert screen.query_one(TextArea).text == "hugs na"
        assert screen.at == screen.walk.lookups and shown_ids(app) == tokenizer.encode("hugs na")
        await pilot.press("escape")
        assert isinstance(app.focused, TokenSpans) and not screen.has_class("-editing")
        await pilot.press("home", "n")
        assert shown_ids(app) == [9]


async def test_no_word_at_all(tokenizer: WordPieceTokenizer) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, " [SEP] "))
    async with app.run_test(size=(80, 24)) as pilot:
        assert status(app) == "step 0/0 · no word to match" and shown_ids(app) == [3]
        await pilot.press("n", "l", "e", "p", "home")
        assert app.screen.at == 0


def test_the_walk_is_the_engines_story(tokenizer: WordPieceTokenizer) -> None:
    """Every lookup of encode_steps is one step of the walk, in order."""
    walk = LongestMatchWalk(tokenizer, TEXT)
    traces = tokenizer.encode_steps(TEXT)
    tried = [t for trace in traces for m in trace.matches for t in m.tried]
    walked = [t for move in walk.moves if move.match is not None for t in move.lookups]
    assert walked == tried
    assert walk.lookups == sum(move.size for move in walk.moves)
    assert [walk.focus(move.last).move for move in walk.moves] == walk.moves


async def test_q_goes_back_or_quits(tokenizer: WordPieceTokenizer) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(80, 24)) as pilot:
        assert "quit_app" in {b.action for _, b, enabled, _ in app.screen.active_bindings.values() if enabled}
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_help_in_the_lectures_words(tokenizer: WordPieceTokenizer, capsys) -> None:
    app = BpeApp(WordPieceEncodeScreen(tokenizer, TEXT))
    async with app.run_test(size=(84, 130)) as pilot:  # 80 columns inside the frame, as explain prints
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert app.screen.query_one("#help").border_title == "help: the encode view: WordPiece"
        lines = [line.rstrip() for line in help_lines(app)]
    text = " ".join(lines)
    for words in ("最长匹配", "贪心", "longest match first", "##", "[UNK]", "merge rank", "bpe_tokenize_fast", "cut out"):
        assert words in text
    for title in ("why not BPE's way", "text", "tokens and ids", "longest match", "result"):
        assert title in lines
    keys = {line.split()[0] for line in lines[lines.index("keys") + 1 :]}
    assert {"n", "l", "p", "e", "home", "/", "c", "q", "?"} <= keys
    run_explain(argparse.Namespace(screen="encode", algorithm="wordpiece"))
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert printed[0] == "bpe-tui encode: the encode view: WordPiece"
    assert printed[2:] == lines


def test_the_app_opens_the_view_of_the_models_kind(tokenizer: WordPieceTokenizer, tmp_path: Path) -> None:
    """``bpe-tui encode --model WPDIR`` without --headless opens the WordPiece view."""
    tokenizer.save_dir(tmp_path)
    args = argparse.Namespace(
        model=str(tmp_path), pattern=None, text="hugs", file=None, headless=False, json=False, out=None,
        eot=False, text_field="text", workers=None, errors="strict", skip_bad_records=False, skip_bad_inputs=False,
        stdin_format=None,
    )  # fmt: skip
    loaded, text = prepare(args)
    assert isinstance(loaded, WordPieceTokenizer) and text == "hugs"
    assert isinstance(encode_screen(loaded, text), WordPieceEncodeScreen)
    trainer = Trainer.from_text(CORPUS, 300)  # a byte-level model keeps its view
    trainer.run()
    assert isinstance(encode_screen(Tokenizer.from_trainer(trainer), None), EncodeScreen)


async def test_e_on_the_wordpiece_training_screen(lecture: Path) -> None:  # noqa: F811
    """e opens the encode view on the vocabulary as trained so far; q goes back."""
    app, screen = wordpiece_app(lecture)
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n", "n")
        await at_merge(pilot, screen, 3)
        assert "e" in screen.active_bindings
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, WordPieceEncodeScreen))
        view = app.screen
        trainer = WordPieceTrainer.from_file(lecture, 30)
        trainer.goto(3)
        vocab, _, _ = trainer.state()
        assert view.tokenizer.vocab == list(vocab)
        assert view.walk.text.startswith("hug hug")  # the start of the corpus
        await pilot.press("e")
        assert [i for i, _ in view.walk.tokens(view.at)] == view.tokenizer.encode(view.walk.text)
        await pilot.press("home", "n", "n")
        assert spans_on_screen(view.query_one(TokenSpans))[0].split() == ["hu", "##g"]  # h + ##u → hu is merge 3
        assert shown_ids(app) == view.tokenizer.encode("hug")
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is screen and isinstance(app.screen, TrainScreen)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_mid_encode(snap_compare, tokenizer: WordPieceTokenizer, size: tuple[int, int]) -> None:
    """80x24: part-way through the search after un (##affa not found, ##aff next); 160x48:
    naïve found [UNK]."""
    keys = ["n", "l"] if size == (80, 24) else ["n"] * 8
    assert snap_compare(BpeApp(WordPieceEncodeScreen(tokenizer, TEXT)), press=keys, terminal_size=size)
