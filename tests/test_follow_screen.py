"""The training screen for the lectures' students: parts of characters named, a word followed
through training, the lesson exported (a trace, a picture), keys kept while the corpus loads.

On 9 KB of 西游记 (``tests/fixtures/zh-xiyouji-9k.txt``), where every character is three bytes.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import struct
import subprocess
import threading
import zlib
from pathlib import Path

import pytest
from textual.geometry import Region

from bpe_tui.app import BpeApp
from bpe_tui.common.navigation import Deliver
from bpe_tui.common.tokens import show_parts
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.encode.widgets.pair_ranks import PairRanks
from bpe_tui.train.screen import TrainScreen
from bpe_tui.train.widgets.followed_words import FollowedWords
from bpe_tui.train.widgets.pair_table import PairTable
from bpe_tui.train.widgets.vocab_growth import NewestTokens
from engine import Tokenizer, Trainer
from tests.conftest import refused, run_cli
from tests.test_encode_screen import on_screen
from tests.train_app import ZH, ZH_MERGES, after, at_merge, wait_until, zh_app

SUN = "孙悟空"
SUN_MERGES = (30, 118, 133)
"""The merges that change 孙悟空 on the fixture at vocab size 400 (checked below)."""


def lines_of(widget) -> list[str]:
    """What a bordered panel shows now, inside its border."""
    lines = [strip.text for strip in widget.render_lines(Region(0, 0, *widget.outer_size))]
    return [line[2:-2].rstrip() for line in lines[1:-1]]


def status(screen: TrainScreen) -> str:
    return str(screen.query_one("#status").render())


def test_part_of_a_character_named_within_its_text():
    wu = "五".encode()  # \xe4\xba\x94
    assert show_parts([wu[:2], wu[2:]]) == ["五₁₋₂", "五₃"]
    assert show_parts([wu[:1], wu[1:2], wu[2:] + b" x"]) == ["五₁", "五₂", "五₃␣x"]
    assert show_parts([b"\xe4\xba", b"\x94\xe4\xba", b"\x94"]) == ["五₁₋₂", "五₃五₁₋₂", "五₃"]
    assert show_parts(["😀".encode()[:3], "😀".encode()[3:]]) == ["😀₁₋₃", "😀₄"]
    assert show_parts([b"caf\xc3", b"\xa9"]) == ["caf\u00e9\u2081", "\u00e9\u2082"]  # café
    assert show_parts([wu[:2], wu[2:]], raw=True) == ["\\xe4\\xba", "\\x94"]
    assert show_parts([b"\xe4\xba"]) == ["\\xe4\\xba"]  # alone, the character is not there to name


async def test_the_first_merges_name_their_characters():
    app, screen = zh_app()
    async with app.run_test(size=(160, 60)) as pilot:  # tall: the newest tokens shown
        await at_merge(pilot, screen, 0)
        await pilot.press("n", "n")
        await at_merge(pilot, screen, 2)
        pairs = lines_of(screen.query_one(PairTable))
        # The top pair \xef|\xbc begins the full-width punctuation ：！？, written as the corpus has it.
        assert any("\\xef|\\xbc →：！" in line for line in pairs), pairs
        newest = lines_of(screen.query_one(NewestTokens))
        assert any("\\xe4\\xb8 →" in line for line in newest), newest
        changes = " ".join(lines_of(screen.query_one("#changes")))
        assert "begins" in changes and "(bytes 1-2 of 3)" in changes
        await pilot.press("x")  # raw bytes: nothing named
        await pilot.pause()
        assert not any("→" in line for line in lines_of(screen.query_one(PairTable))[1:3])
        await pilot.press("x")
        await pilot.pause()
        assert any("→：！" in line for line in lines_of(screen.query_one(PairTable)))


async def test_the_pair_panel_names_the_characters_of_its_cells():
    app, screen = zh_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("o")
        await wait_until(pilot, lambda: screen.snapshot.upcoming is not None)
        shown = " ".join(lines_of(screen.query_one("#occurrences")))
        assert "一₁]" in shown and "一₂]" in shown and "一₃]" in shown  # \xe4\xb8\x80, the top pair's character


async def test_a_followed_word_changes_merge_by_merge_and_back():
    app, screen = zh_app(follow=[SUN])
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        panel = screen.query_one(FollowedWords)
        assert screen.has_class("-following")
        assert lines_of(panel)[:2] == [
            f"{SUN}  ×0 as a pre-token, ×7 inside longer ones",
            "  9 tokens: 孙₁|孙₂|孙₃|悟₁|悟₂|悟₃|空₁|空₂|空₃",
        ]
        await pilot.press("g", *str(SUN_MERGES[0]), "enter")
        await at_merge(pilot, screen, SUN_MERGES[0])
        assert lines_of(panel)[1:] == ["  8 tokens: 孙₁₋₂|孙₃|悟₁|悟₂|悟₃|空₁|空₂|空₃", f"  #{SUN_MERGES[0]} 孙₁+孙₂"]
        await pilot.press("g", *str(SUN_MERGES[2]), "enter")
        await at_merge(pilot, screen, SUN_MERGES[2])
        assert lines_of(panel)[1:] == [
            "  6 tokens: 孙₁₋₂|孙₃|悟₁|悟₂|悟₃|空",
            f"  #{SUN_MERGES[0]} 孙₁+孙₂ · #{SUN_MERGES[1]} 空₁+空₂ · #{SUN_MERGES[2]} 空₁₋₂+空₃",
        ]
        await pilot.press("b")  # one back: 空 comes apart again
        await at_merge(pilot, screen, SUN_MERGES[2] - 1)
        assert lines_of(panel)[1] == "  7 tokens: 孙₁₋₂|孙₃|悟₁|悟₂|悟₃|空₁₋₂|空₃"
        await pilot.press("w", *"tokenization", "enter")  # not in the corpus: still cut
        await wait_until(pilot, lambda: len(lines_of(panel)) == 6)  # the panel grows to hold it
        assert "tokenization  not in the corpus" in lines_of(panel)[3]
        await pilot.press("w", *SUN, "enter")  # followed: stop following it
        await wait_until(pilot, lambda: [w.word for w in screen.snapshot.followed] == ["tokenization"])


async def test_step_keys_wait_while_the_corpus_loads(monkeypatch):
    """The first snapshot is held back, so the keys surely come while the screen loads."""
    ready = threading.Event()
    report = TrainScreen._report

    def held(self, message):
        if message[0] == "sampled":
            ready.wait(20)
        report(self, message)

    monkeypatch.setattr(TrainScreen, "_report", held)
    app, screen = zh_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n", "n", "b", "n")
        assert screen.snapshot is None
        assert "pre-tokenizing · waiting: n n b n" in status(screen)
        ready.set()
        await at_merge(pilot, screen, 2)
        assert "waiting" not in status(screen)


async def test_trace_and_picture_from_the_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short names to type
    app, screen = zh_app()
    trace, picture = tmp_path / "merges.json", tmp_path / "screen.svg"
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("g", "5", "enter")
        await at_merge(pilot, screen, 5)
        await pilot.press("t", "ctrl+u", *"merges.json", "enter")
        await wait_until(pilot, lambda: trace.exists())
        await pilot.press("p", "ctrl+u", *"screen.svg", "enter")
        await wait_until(pilot, lambda: picture.exists())
        await pilot.press("t", "ctrl+u", *"merges.txt", "enter")  # refused, in one line
        await pilot.pause()
        assert any("a trace is written as .csv or .json" in n.message for n in app._notifications)
    written = json.loads(trace.read_text(encoding="utf-8"))
    assert written["merges_done"] == 5 and [m["merge"] for m in written["merges"]] == [1, 2, 3, 4, 5]
    assert written["merges"][0]["characters"]["begins"] == ["不", "一", "个", "与", "上"]  # counted: 39, 32, 28, 15, 11
    assert picture.read_text(encoding="utf-8").startswith("<svg")
    assert "merge 5/143" in picture.read_text(encoding="utf-8").replace("&#160;", " ")


async def test_in_a_browser_exports_download(monkeypatch):
    """Served, the file goes to the browser, never to the server's disk."""
    sent: list[tuple[str, str]] = []
    monkeypatch.setattr(BpeApp, "is_web", property(lambda self: True))
    monkeypatch.setattr(BpeApp, "deliver_text", lambda self, file, save_filename: sent.append((save_filename, file.read())))
    app, screen = zh_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        app.post_message(Deliver("/server/side/merges.csv", "merge\n", "trace"))
        await wait_until(pilot, lambda: bool(sent))
    assert sent == [("merges.csv", "merge\n")]


def test_headless_trace_lists_the_saved_tokenizers_merges(tmp_path):
    """The trace of a run: the merges of the tokenizer saved from that run, in order, with the
    counts the trainer's events give; the JSON as the CSV."""
    out = tmp_path / "out"
    done = run_cli("train", str(ZH), "--vocab-size", "400", "--headless", "--out", str(out), "--trace", str(tmp_path / "t.csv"))
    assert done.returncode == 0, done.stderr
    saved = Tokenizer.load(out / "tokenizer.json")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "t.csv").read_text(encoding="utf-8"))))
    assert len(rows) == ZH_MERGES
    assert [(bytes.fromhex(r["left_hex"]), bytes.fromhex(r["right_hex"])) for r in rows] == saved.merges
    steps = list(Trainer.from_files([ZH], 400, ["<|endoftext|>"], workers=1).steps())
    assert [int(r["count"]) for r in rows] == [s.count for s in steps]
    assert [int(r["changed"]) for r in rows] == [len(s.changes) for s in steps]
    done = run_cli("train", str(ZH), "--vocab-size", "400", "--headless", "--out", str(out), "--trace", str(tmp_path / "t.json"))
    merges = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))["merges"]
    assert [(m["left"], m["right"], m["count"]) for m in merges] == [(r["left"], r["right"], int(r["count"])) for r in rows]


def test_trace_and_follow_refused_in_one_line(tmp_path):
    done = run_cli("train", str(ZH), "--headless", "--out", str(tmp_path), "--trace", "t.txt")
    refused(done, "--trace t.txt: a trace is written as .csv or .json")
    refused(run_cli("train", str(ZH), "--trace", str(tmp_path / "t.csv")), "--trace is for --headless runs")
    refused(run_cli("train", "--classic", "--follow", "low"), "--follow follows words through byte-level BPE")
    refused(run_cli("train", str(ZH), "--headless", "--out", str(tmp_path), "--follow", ""), "--follow '': give a word to follow")


def png_colours(data: bytes) -> int:
    """How many distinct byte values a PNG's pixels hold (one: a blank picture)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, i = [], 8
    while i < len(data):
        (length,) = struct.unpack(">I", data[i : i + 4])
        kind = data[i + 4 : i + 8]
        if kind == b"IDAT":
            chunks.append(data[i + 8 : i + 8 + length])
        i += 12 + length
    return len(set(zlib.decompress(b"".join(chunks))))


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no Chromium (Debian: apt-get install chromium) to open the picture with")
async def test_the_picture_opens_in_chromium(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short name to type
    app, screen = zh_app(follow=[SUN])
    picture = tmp_path / "screen.svg"
    async with app.run_test(size=(80, 24)) as pilot:
        await at_merge(pilot, screen, 0)
        await pilot.press("p", "ctrl+u", *"screen.svg", "enter")
        await wait_until(pilot, lambda: picture.exists())
    png = tmp_path / "screen.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={png}",
            "--window-size=1000,700",
            picture.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert png.exists()
    assert png_colours(png.read_bytes()) > 16


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_a_word_followed_and_characters_named(snap_compare, size):
    """Merge 30 has just joined the first two bytes of 孙: the followed word shows it, and the
    pair panel the cells it joined (in place of the corpus row, whose plot at 80x24 would be
    two rows, too few for plotext to pick its tick labels the same way each run)."""
    app, _ = zh_app(follow=[SUN])
    assert snap_compare(app, terminal_size=size, run_before=after("g", "3", "0", "enter", "o", merge=30))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_the_pair_panel_on_chinese(snap_compare, size):
    """The next pair's cells, each naming its character and bytes."""
    app, _ = zh_app()
    assert snap_compare(app, terminal_size=size, run_before=after("n", "n", "o", merge=2))


async def test_the_encode_view_names_the_parts_of_a_pre_token():
    """The pre-token's parts and its pairs, read within it."""
    trainer = Trainer.from_files([ZH], 400, ["<|endoftext|>"], workers=1)
    trainer.run(until=SUN_MERGES[0])
    app = BpeApp(EncodeScreen(Tokenizer.from_trainer(trainer), SUN))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        pairs = app.screen.query_one(PairRanks)
        head = on_screen(pairs.query_one("#round"))
        assert head[0] == "parts  孙₁ 孙₂ 孙₃ 悟₁ 悟₂ 悟₃ 空₁ 空₂ 空₃"
        assert head[1].startswith("merges now: 孙₁ + 孙₂ → \\xe5\\xad")
