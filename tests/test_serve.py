"""``bpe-tui serve``: the command it serves, what it refuses, and the app over its websocket."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shlex
import signal
import socket
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bpe_tui.cli import main
from bpe_tui.serve.command import banner, class_full, public_url, served_command
from tests.conftest import refused, run_cli

needs_textual_serve = pytest.mark.skipif(
    importlib.util.find_spec("textual_serve") is None, reason="textual-serve is not installed (pip install 'bpe-tui[web]')"
)


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))))
def test_served_command_is_this_python_running_the_same_arguments(args: list[str]) -> None:
    """Quotes, spaces, ``$(...)`` and ``;`` reach the served command as they were typed."""
    assert shlex.split(served_command(args)) == [sys.executable, "-m", "bpe_tui.cli", *args]


def test_public_url() -> None:
    assert public_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert public_url("::1", 8000) == "http://[::1]:8000"
    lan = public_url("0.0.0.0", 9000)  # a browser elsewhere needs this machine's address
    assert lan.endswith(":9000") and "0.0.0.0" not in lan


def test_the_banner_says_who_can_connect() -> None:
    assert banner("bpe-tui train", "127.0.0.1", "http://127.0.0.1:8000", 40).splitlines() == [
        "bpe-tui: serving `bpe-tui train` at http://127.0.0.1:8000",
        "  listening on 127.0.0.1 only: no other machine can connect",
        "  each browser tab runs its own app process, at most 40 at once; Ctrl+C stops the server",
    ]
    assert "no other machine" in banner("t", "localhost", "http://localhost:8000", 40)
    wide = banner("bpe-tui train", "0.0.0.0", "http://10.1.2.3:8000", 40).splitlines()[1]
    assert wide == "  listening on every network interface: anyone who can reach http://10.1.2.3:8000 can open it"
    assert banner("t", "10.1.2.3", "http://10.1.2.3:8000", 40).splitlines()[1] == "  listening on 10.1.2.3 only"
    cold = banner("t", "127.0.0.1", "http://127.0.0.1:8000", 40, "fork is unsafe on macOS").splitlines()
    assert cold[3] == "  each tab starts a new Python, slower than forking a warm one: fork is unsafe on macOS"


def test_missing_textual_serve_names_the_extra(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)  # import fails as if absent
    assert main(["serve", "train"]) == 2
    err = capsys.readouterr().err
    assert err == "bpe-tui: serve needs textual-serve: pip install 'bpe-tui[web]'\n"


@needs_textual_serve
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["serve", "train", "--vocab-sise", "300"], "unrecognized arguments: --vocab-sise"),
        (["serve", "train", "--headless"], "it has no screen to serve"),
        (["serve", "decode", "--model", "x", "1"], "it has no screen to serve"),
        (["serve", "serve"], "it has no screen to serve"),
        (["serve", "explain"], "it has no screen to serve"),
        (["serve", "encode", "--text", "hi"], "the following arguments are required: --model"),
        (["serve", "train", "missing.txt"], "missing.txt: no such file or directory"),
        (["serve", "train", "--vocab-size", "256"], "vocab size 256 is below 257"),
        (["serve", "encode", "--model", "no/such/dir"], "no such file or directory"),
        (["serve", "--port", "70000"], "--port 70000: not a port number"),
        (["serve", "--host", "no-such-host.invalid"], "--host no-such-host.invalid"),
        (["train", "--port", "8000"], "unrecognized arguments: --port"),
        (["serve", "--max-sessions", "0"], "--max-sessions 0: at least 1 browser tab must be able to open the app"),
        # What names a file to write on the server: every tab would write it.
        (["serve", "train", "--out", "x"], "serve: --out would write on this machine from every browser tab; served, s downloads"),
        (["serve", "train", "--save-counts", "c.pkl"], "serve: --save-counts would write on this machine from every browser tab"),
        (["serve", "encode", "--model", "m", "--file", "f", "--out", "ids.bin"], "serve: --out would write on this machine"),
    ],
)
def test_refused_before_serving(args: list[str], expected: str) -> None:
    refused(run_cli(*args), expected)


@needs_textual_serve
def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refused(run_cli("serve", "--port", str(port)))
    assert line == f"bpe-tui: cannot listen on 127.0.0.1:{port}: Address already in use"


ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")


@needs_textual_serve
async def test_the_served_app_over_its_websocket(tmp_path: Path) -> None:
    """What a browser tab does, without the browser: open the page's websocket, read the
    training screen from the terminal stream, send ``n``, read merge 1."""
    import aiohttp

    from tests.served import serve

    log = tmp_path / "serve.log"
    async with aiohttp.ClientSession() as session:
        async with serve("train", "--vocab-size", "300", log=log) as url:
            async with session.get(url) as page:
                html = await page.text()
            ws_url = url.replace("http:", "ws:") + "ws?width=100&height=30"
            assert f'data-session-websocket-url="{ws_url.split("?")[0]}"' in html
            ws = await session.ws_connect(ws_url)
            await _read_until(ws, "next merge: pair_counter top")
            await ws.send_json(["stdin", "n"])
            await _read_until(ws, "merge 1/43")
            closed = asyncio.create_task(_until_closed(ws))  # the tab stays open, as a browser's would
        # Stopped with the tab open, the server closed it, and serve() saw its app go too.
        assert await asyncio.wait_for(closed, timeout=30)
    banner = log.read_text(encoding="utf-8").splitlines()
    assert banner[0] == f"bpe-tui: serving `bpe-tui train --vocab-size 300` at {url.rstrip('/')}"
    assert banner[1] == "  listening on 127.0.0.1 only: no other machine can connect"


async def _until_closed(ws) -> bool:
    """Read the tab until the server closes it."""
    import aiohttp

    while True:
        message = await ws.receive()
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
            return True


async def _read_until(ws, text: str, limit: float = 30.0) -> str:
    """The terminal output (escape sequences removed) up to where ``text`` shows."""
    seen = ""
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while text not in seen:
        message = await asyncio.wait_for(ws.receive(), timeout=max(0.1, end - loop.time()))
        if isinstance(message.data, bytes):
            seen += ANSI.sub("", message.data.decode("utf-8", errors="replace"))
    return seen


@needs_textual_serve
async def test_the_served_text_reaches_the_app_as_typed(tmp_path: Path) -> None:
    """Through the shell that textual-serve starts each tab with: quotes, ``$(...)``, ``;``."""
    import aiohttp

    from engine import Tokenizer, Trainer
    from tests.served import serve

    trainer = Trainer.from_text("it is what it is; it's ok " * 20, 270, [])
    trainer.run()
    Tokenizer.from_trainer(trainer).save_dir(tmp_path / "tok")
    text = 'it\'s $(echo no); ok `x` "y"'
    async with serve("encode", "--model", str(tmp_path / "tok"), "--text", text, log=tmp_path / "serve.log") as url:
        async with aiohttp.ClientSession() as session:
            ws_url = url.replace("http:", "ws:") + "ws?width=100&height=30"
            async with session.ws_connect(ws_url) as ws:
                await _read_until(ws, text)


def test_tabs_start_cold_where_fork_is_missing_or_unsafe(monkeypatch) -> None:
    from bpe_tui.serve.warm import cold

    if sys.platform == "linux":
        assert cold() is None
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cold() == "fork is unsafe on macOS"
    monkeypatch.delattr(os, "fork")
    assert cold() == "this system has no fork"


@needs_textual_serve
async def test_a_cold_tab_runs_the_app_as_before(tmp_path: Path) -> None:
    """Where tabs cannot fork warm, the server says so once, and each tab starts the served
    command in a new interpreter."""
    import aiohttp

    from tests.served import serving

    log = tmp_path / "serve.log"
    async with aiohttp.ClientSession() as session:
        async with serving("train", "--vocab-size", "300", log=log, cold=True) as (url, _):
            async with session.ws_connect(url.replace("http:", "ws:") + "ws?width=100&height=30") as ws:
                await _read_until(ws, "next merge: pair_counter top")
                await ws.send_json(["stdin", "n"])
                await _read_until(ws, "merge 1/43")
    said = log.read_text(encoding="utf-8").splitlines()
    assert said[3] == "  each tab starts a new Python, slower than forking a warm one: fork is unsafe on macOS"


def test_class_full_says_how_many() -> None:
    assert class_full(40) == "The class is full: 40 sessions are open. Try again when someone leaves."
    assert class_full(1) == "The class is full: 1 session is open. Try again when someone leaves."


@needs_textual_serve
async def test_the_class_is_full_and_a_closed_tab_ends_its_processes(tmp_path: Path) -> None:
    """``--max-sessions 1``: with one tab open, a new browser gets the page saying the class is
    full, and its websocket starts no app. The open tab is two processes, its app and its
    trainer; closed while training, both end (the server's group holds the server, its warm
    parent and resource tracker again) and the page is the app's again."""
    import aiohttp

    from tests.served import group_members, serving, serving_alone, until

    async with aiohttp.ClientSession() as session:
        async with serving("train", "--max-sessions", "1", log=tmp_path / "serve.log") as (url, server):
            alone = await serving_alone(server)
            ws_url = url.replace("http:", "ws:") + "ws?width=100&height=30"
            ws = await session.ws_connect(ws_url)
            await _read_until(ws, "next merge: pair_counter top")
            await ws.send_json(["stdin", " "])  # play
            await _read_until(ws, "playing")
            tab = set(group_members(server)) - alone
            assert len(tab) == 2, "a tab is its app and its trainer"
            async with session.get(url) as page:
                assert page.status == 503
                assert "<p>The class is full: 1 session is open. Try again when someone leaves.</p>" in await page.text()
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused_tab:
                await session.ws_connect(ws_url)
            assert refused_tab.value.status == 503
            assert set(group_members(server)) - alone == tab  # no app started for it
            await ws.close()
            assert await until(lambda: set(group_members(server)) == alone, limit=30.0), "the closed tab left processes"
            async with session.get(url) as page:
                assert page.status == 200 and "data-session-websocket-url" in await page.text()


@needs_textual_serve
async def test_a_tab_killed_leaves_the_others_working(tmp_path: Path) -> None:
    """Three tabs, each its app and trainer forked from the warm parent; one tab's app sent
    SIGKILL: its trainer ends with it, the two other tabs step on, and once every tab closes
    the server's group is as it was before the first opened."""
    import aiohttp

    from tests.served import group_members, serving, serving_alone, until

    async with aiohttp.ClientSession() as session:
        async with serving("train", "--vocab-size", "300", log=tmp_path / "serve.log") as (url, server):
            alone = await serving_alone(server)
            ws_url = url.replace("http:", "ws:") + "ws?width=100&height=30"
            tabs, processes = [], []
            for _ in range(3):
                known = set(group_members(server))
                tabs.append(await session.ws_connect(ws_url))
                await _read_until(tabs[-1], "⏸ paused")  # the corpus's counts in, the trainer waiting
                processes.append(set(group_members(server)) - known)
            assert [len(p) for p in processes] == [2, 2, 2], "each tab is its app and its trainer"
            killed = processes[0]
            app = next(pid for pid in killed if os.readlink(f"/proc/{pid}/fd/0").startswith("pipe:"))  # the tab's stdin
            assert not _sockets(app) & _sockets(server), "a tab's app holds a socket of the server's"
            os.kill(app, signal.SIGKILL)
            assert await until(lambda: not killed & set(group_members(server)), limit=30.0), "the killed tab's trainer lived on"
            for ws in tabs[1:]:
                await ws.send_json(["stdin", "n"])
                await _read_until(ws, "merge 1/43")
            for ws in tabs:
                await ws.close()
            assert await until(lambda: set(group_members(server)) == alone, limit=30.0), "the closed tabs left processes"


def _sockets(pid: int) -> set[str]:
    """The sockets process ``pid`` holds open, as ``socket:[inode]``."""
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:  # closed since listed
            pass
    return {link for link in held if link.startswith("socket:")}


def test_one_file_downloads_as_it_is_several_as_one_zip() -> None:
    """Classic BPE's one file goes as it is; the three of a byte-level tokenizer go as one zip
    holding a folder of the zip's name."""
    import io
    import zipfile

    from bpe_tui.common.downloads import download

    class Browser:  # what Textual's delivery hands on, recorded
        def __init__(self) -> None:
            self.got: list[tuple[str, bytes, str | None]] = []

        def deliver_text(self, file, save_filename: str, mime_type: str | None = None) -> None:
            self.got.append((save_filename, file.read().encode("utf-8"), mime_type))

        def deliver_binary(self, file, save_filename: str, mime_type: str | None = None) -> None:
            self.got.append((save_filename, file.getvalue(), mime_type))

    browser = Browser()
    assert download(browser, "bpe-classic-merge-3", {"classic_bpe.json": "{}\n"}) == "classic_bpe.json"
    assert browser.got == [("classic_bpe.json", b"{}\n", None)]
    files = {"tokenizer.json": "{}", "vocab.json": "{}", "merges.txt": "#version: 0.2\n"}
    assert download(browser, "bpe-tokenizer-merge-3", files) == "bpe-tokenizer-merge-3.zip"
    name, data, mime = browser.got[1]
    assert (name, mime) == ("bpe-tokenizer-merge-3.zip", "application/zip")
    with zipfile.ZipFile(io.BytesIO(data)) as zipped:
        assert {n: zipped.read(n).decode("utf-8") for n in zipped.namelist()} == {f"bpe-tokenizer-merge-3/{n}": t for n, t in files.items()}


def test_a_corpus_loaded_ahead_is_not_counted_again(monkeypatch, tmp_path: Path) -> None:
    """What the warm parent does for a served ``train``: the corpus counted into a trainer at
    merge 0 once; the first load after (in each tab's process, forked from it) takes that
    trainer. It goes to the first: a second load in the same process counts again."""
    import engine.train.settings
    import engine.train.trainer
    from engine.train.settings import TrainOptions

    monkeypatch.setattr(engine.train.settings, "_LOADED_AHEAD", {})
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat; the hat " * 50, encoding="utf-8")
    TrainOptions.checked([str(corpus)], 300, ["<|endoftext|>"]).load_ahead([str(corpus)])

    def count_again(*args: object, **kwargs: object) -> None:
        raise AssertionError("counted again")

    monkeypatch.setattr(engine.train.trainer, "count_parts", count_again)
    same = TrainOptions.checked([str(corpus)], 300, ["<|endoftext|>"])  # built again, as each tab does
    trainer = same.load([str(corpus)])
    assert trainer.merges_done == 0
    trainer.run()
    assert trainer.merges[0] == (b"a", b"t")
    assert trainer.summary is not None and trainer.summary.bytes_read == corpus.stat().st_size
    with pytest.raises(AssertionError, match="counted again"):
        same.load([str(corpus)])
