"""The training screen driven as a user would: keys in, panels and status out."""

from __future__ import annotations

import json

from textual import events
from textual.keys import _character_to_key
from textual.widgets import Input, Label

from bpe_tui.common.prompt import ConfirmScreen, PromptScreen
from bpe_tui.train.widgets.heap_stats import HeapStats
from bpe_tui.train.widgets.merge_changes import MergeChanges
from bpe_tui.train.widgets.status_line import StatusLine
from engine import Tokenizer
from tests.train_app import SAMPLE_MERGES, at_merge, train_app, wait_until


def status(screen) -> str:
    return str(screen.query_one(StatusLine).render())


async def test_opens_on_merge_zero_with_the_winner_on_top():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        assert f"merge 0/{SAMPLE_MERGES}" in status(screen)
        (pair, count), *_ = screen.snapshot.top_pairs
        assert screen.snapshot.names[pair[0]] + screen.snapshot.names[pair[1]] == b"he"
        assert count == 280


async def test_each_key_press_is_one_merge():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n", "n")
        await at_merge(pilot, screen, 3)
        last = screen.snapshot.last
        assert last.index == 3 and last.token == b" the"
        assert any(w.parts == [b" the"] for w in screen.snapshot.words)
        assert f"merge 3/{SAMPLE_MERGES}" in status(screen)


async def test_play_then_pause():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("minus", "space")  # 5 merges/s: the screen keeps up between presses
        assert screen.playing and "playing 5 merges/s" in status(screen)
        await wait_until(pilot, lambda: screen.snapshot.merges_done >= 3)
        await pilot.press("space")
        assert not screen.playing and "paused" in status(screen)
        await pilot.pause(0.3)
        paused_at = screen.snapshot.merges_done
        await pilot.pause(0.3)
        assert screen.snapshot.merges_done == paused_at < SAMPLE_MERGES


async def test_go_to_k_and_back():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("g", *"200", "enter")
        await at_merge(pilot, screen, 200)
        forwards = screen.snapshot
        await pilot.press("b")
        await at_merge(pilot, screen, 199)
        await pilot.press("g", *"5", "enter")
        await at_merge(pilot, screen, 5)
        await pilot.press("g", *"200", "enter")
        await at_merge(pilot, screen, 200)
        again = screen.snapshot
        assert again.last.token == forwards.last.token  # replaying gives the same merges
        assert again.merge_counts == forwards.merge_counts
        await pilot.press("g", *"0", "enter")
        await at_merge(pilot, screen, 0)
        assert screen.snapshot.last is None


CHARACTERS = {"enter": "\r", "escape": "\x1b", "ctrl+u": "\x15"}


def type_at_once(app, *keys: str) -> None:
    """Send ``keys`` as a paste or a fast typist does: all queued before the app handles the
    first, where ``pilot.press`` lets the app settle after each."""
    for key in keys:
        if len(key) == 1:  # a character: named as a terminal names it ("/" is slash), as pilot.press does
            key, character = (key if key.isalnum() else _character_to_key(key)), key
        else:
            character = CHARACTERS[key]
        event = events.Key(key, character)
        event.set_sender(app)
        app._driver.send_message(event)


async def test_keys_typed_at_once_go_into_the_prompt_they_open():
    """The digits and Enter typed right after ``g`` reach the prompt ``g`` opens, in order;
    so does an Escape, which cancels it."""
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        type_at_once(app, "g", "5", "0", "enter")
        await at_merge(pilot, screen, 50)
        assert app.screen is screen
        type_at_once(app, "g", "7", "escape", "n")
        await at_merge(pilot, screen, 51)
        assert app.screen is screen


async def test_keys_typed_at_once_answer_the_save_prompt_and_its_confirm(tmp_path):
    """The directory and Enter typed right after ``s`` reach the prompt; a key typed after
    that Enter reaches the dialog the answer opens, not the prompt closing."""
    (tmp_path / "tokenizer.json").write_text("someone else's", encoding="utf-8")
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        type_at_once(app, "s", "ctrl+u", *str(tmp_path), "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        type_at_once(app, "escape")
        await wait_until(pilot, lambda: app.screen is screen)
        assert (tmp_path / "tokenizer.json").read_text(encoding="utf-8") == "someone else's"
        type_at_once(app, "s", "ctrl+u", *str(tmp_path), "enter", "y")
        await wait_until(pilot, lambda: (tmp_path / "merges.txt").exists())
        assert Tokenizer.load(tmp_path).merges == []
        assert app.screen is screen


async def test_go_to_a_merge_out_of_range_says_where_it_went():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("g", *"9999", "enter")
        await at_merge(pilot, screen, SAMPLE_MERGES)
        assert list(app._notifications)[-1].message == f"there is no merge 9,999: going to the last, merge {SAMPLE_MERGES}"
        await pilot.press("g", *"-5", "enter")
        await at_merge(pilot, screen, 0)
        assert list(app._notifications)[-1].message == "there is no merge -5: going to the first, merge 0"


async def test_fast_forward_to_the_end():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("f")
        await at_merge(pilot, screen, SAMPLE_MERGES)
        assert "done" in status(screen)
        await pilot.press("n")  # nothing left: stays put, the last merge still shown
        await wait_until(pilot, lambda: any("training is done" in n.message for n in app._notifications))
        await at_merge(pilot, screen, SAMPLE_MERGES)
        assert screen.snapshot.last.index == SAMPLE_MERGES
        assert f"#{SAMPLE_MERGES} " in str(screen.query_one(MergeChanges).render())
        assert "last merge pushed" in str(screen.query_one(HeapStats).render())


async def test_save_asks_where_and_writes_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short name to type
    app, screen = train_app()
    target = tmp_path / "saved"
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n")
        await at_merge(pilot, screen, 2)
        await pilot.press("s")
        await pilot.press("ctrl+u", *"saved", "enter")
        await wait_until(pilot, lambda: (target / "merges.txt").exists())
    merges = (target / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert [m for m in merges if not m.startswith("#")] == ["h e", "Ġ t"]
    assert len(json.loads((target / "vocab.json").read_text(encoding="utf-8"))) == 259


async def test_save_names_the_directory_whole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "s", "ctrl+u", *"here", "enter")
        await wait_until(pilot, lambda: (tmp_path / "here" / "merges.txt").exists())
        saved = f"saved merge 1 to {tmp_path / 'here'}: tokenizer.json, vocab.json, merges.txt"
        await wait_until(pilot, lambda: any(n.message == saved for n in app._notifications))


async def test_after_a_failed_save_s_asks_again(tmp_path, monkeypatch):
    """A directory that cannot be made is said in the CLI's one line, named whole as a save
    names it; the next ``s`` asks for a directory again, starting from that one as typed,
    rather than trying it again unasked."""
    monkeypatch.chdir(tmp_path)  # short names to type
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("s", "ctrl+u", *"a-file/out", "enter")
        failure = f"not saved: {tmp_path / 'a-file' / 'out'}: cannot write it (Not a directory)"
        await wait_until(pilot, lambda: any(n.message == failure for n in app._notifications))
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert app.screen.query_one(Input).value == "a-file/out"
        await pilot.press("ctrl+u", *"out", "enter")
        await wait_until(pilot, lambda: (tmp_path / "out" / "merges.txt").exists())


async def test_a_save_into_a_symbolic_link_loop_is_not_saved(tmp_path, monkeypatch):
    """A directory that is a symbolic link to itself is not saved, in the same one line,
    rather than ending the app."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop").symlink_to("loop")
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("s", "ctrl+u", *"loop", "enter")
        failure = f"not saved: {tmp_path / 'loop'}: cannot write it (a symbolic link loop)"
        await wait_until(pilot, lambda: any(n.message == failure for n in app._notifications))
        assert app.screen is screen and app.return_code is None


async def test_save_to_out_without_asking(tmp_path):
    app, screen = train_app(out=str(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("s")
        await wait_until(pilot, lambda: (tmp_path / "tokenizer.json").exists())


async def test_save_asks_before_replacing_files_it_did_not_write(tmp_path):
    """``n`` (or Escape) keeps what the directory holds; ``y`` replaces it; once written by
    this screen, saving there again asks no more."""
    (tmp_path / "tokenizer.json").write_text("someone else's", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not ours to touch", encoding="utf-8")
    app, screen = train_app(out=str(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one(Label).render())
        assert question == f"{tmp_path} already holds tokenizer.json. Replace it?"
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is screen)
        assert app._notifications and list(app._notifications)[-1].message == f"not saved: {tmp_path} keeps its files"
        await pilot.press("s", "escape")
        await wait_until(pilot, lambda: app.screen is screen)
        await pilot.press("s", "enter")  # Enter alone presses the focused Keep
        await wait_until(pilot, lambda: app.screen is screen)
        await at_merge(pilot, screen, 1)
        assert (tmp_path / "tokenizer.json").read_text(encoding="utf-8") == "someone else's"
        assert not (tmp_path / "merges.txt").exists()
        await pilot.press("s", "y")
        await wait_until(pilot, lambda: (tmp_path / "merges.txt").exists())
        assert Tokenizer.load(tmp_path).merges == [(b"h", b"e")]
        await pilot.press("n", "s")  # its own files now: replaced without asking
        await wait_until(pilot, lambda: len(Tokenizer.load(tmp_path).merges) == 2)
        assert app.screen is screen
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "not ours to touch"


async def test_save_asks_for_a_directory_then_before_replacing(tmp_path, monkeypatch):
    """The directory typed at the prompt is checked too, naming every file it would replace."""
    for name in ("tokenizer.json", "vocab.json", "merges.txt"):
        (tmp_path / name).write_text("old", encoding="utf-8")
    monkeypatch.chdir(tmp_path.parent)  # a short name to type
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("s", "ctrl+u", *tmp_path.name, "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one(Label).render())
        assert question == f"{tmp_path.name} already holds tokenizer.json, vocab.json, merges.txt. Replace them?"
        await pilot.click("#yes")
        await wait_until(pilot, lambda: (tmp_path / "merges.txt").read_text(encoding="utf-8") != "old")
    assert Tokenizer.load(tmp_path).merges == []


async def test_served_save_downloads_and_writes_nothing(tmp_path, monkeypatch):
    """In a browser (Textual's web driver), ``s`` asks for no directory, even with ``--out``:
    the files go to the browser as one zip, and nothing is written where the app runs."""
    import io
    import zipfile

    from bpe_tui.app import BpeApp

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(BpeApp, "is_web", property(lambda app: True))
    delivered: list[tuple[str, bytes]] = []

    def deliver_binary(app, file, save_filename, mime_type):
        delivered.append((save_filename, file.getvalue()))

    monkeypatch.setattr(BpeApp, "deliver_binary", deliver_binary)
    app, screen = train_app(out=str(tmp_path / "out"))
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n", "s")
        await wait_until(pilot, lambda: bool(delivered))
        assert app.screen is screen
    ((name, data),) = delivered
    assert name == "bpe-tokenizer-merge-2.zip"
    with zipfile.ZipFile(io.BytesIO(data)) as zipped:
        zipped.extractall(tmp_path / "got")
    assert Tokenizer.load(tmp_path / "got" / "bpe-tokenizer-merge-2").merges == [(b"h", b"e"), (b" ", b"t")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["got"]


async def test_quit():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_keys_are_in_the_palette_and_remappable():
    app, screen = train_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "step (n)" in titles and "go (g)" in titles and "pair (o)" in titles
        app.set_keymap({"train.step": "j"})
        await pilot.press("j")
        await at_merge(pilot, screen, 1)
