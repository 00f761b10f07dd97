"""``bpe-tui serve``: the app in a web browser, through ``textual-serve``.

``bpe-tui serve train corpus.txt --vocab-size 500`` serves ``bpe-tui train corpus.txt
--vocab-size 500``: whatever follows ``serve`` (other than its own ``--host``, ``--port``,
``--public-url`` and ``--max-sessions``) is the served command, checked by the same parser
as on the command line. Every browser tab that opens the page runs that command in a
process of its own, forked from a warm parent that imported the app and did once what every
tab would (``warm``), up to ``--max-sessions`` at once: past that a new browser is told the
class is full, and no process starts. Where fork is missing or unsafe, each tab starts a new
interpreter, and the server says so. Served, nothing a browser sends writes on this machine
(a save downloads to the browser), and options that would are refused, and so is ``check``,
which runs a Python file. The server listens on 127.0.0.1 unless told otherwise, so only
this machine can connect.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import logging
import shlex
import socket
import sys
from collections.abc import Callable
from typing import Any

from bpe_tui.serve.warm import WarmClass, cold
from engine import BpeError, SettingsError

DEFAULT_SERVED = ["train"]
WRITES_ON_SERVER = {
    "train": {
        "--out": "served, s downloads the files to the browser instead",
        "--save-counts": "save the counts once (bpe-tui train --save-counts FILE --headless), then serve train --counts FILE",
    },
    "encode": {"--out": "write the ids in a terminal (bpe-tui encode --file ... --out IDS)"},
}
"""Options of a served command that name a file to write on the server, and what to do instead.
Reading is fine: a corpus, ``--counts``, ``--model`` and ``--resume`` only read."""
WILDCARD_HOSTS = {"0.0.0.0", "::", ""}
NOT_SERVED = "serve check: check runs a Python file with this machine's rights; each student runs it in their own terminal"
"""Why ``bpe-tui serve check`` is refused: every browser tab could run any file here."""


def served_command(served: list[str]) -> str:
    """The shell command textual-serve runs per tab where tabs start cold: this interpreter,
    the same CLI."""
    return shlex.join([sys.executable, "-m", "bpe_tui.cli", *served])


Prepare = Callable[[argparse.Namespace], object]
"""Checks what a command names (the corpus, the model), as the command itself does first."""
Run = Callable[[argparse.Namespace], int]
"""The CLI's run of a parsed command: each tab's process runs the served command, parsed once
by the server (a tab builds no parser: that would copy pages of the warm parent)."""
Warm = Callable[[argparse.Namespace], None]
"""What every tab of a served command does alike, done once in the warm parent."""


def check_served(served: list[str], parser: argparse.ArgumentParser, prepare: Prepare) -> argparse.Namespace:
    """Refuse, before serving, a command the CLI would refuse or that opens no screen; what it
    names is checked now by ``prepare``, rather than in each browser tab. ``check`` is refused
    whatever follows it: it runs a Python file with this machine's rights."""
    if served[:1] == ["check"]:
        raise SettingsError(NOT_SERVED)
    args = parser.parse_args(served)  # a typo is the parser's one line, exit 2
    if not getattr(args, "has_screen", True) or getattr(args, "headless", False) or getattr(args, "json", False):
        raise SettingsError(f"serve {shlex.join(served)}: that command prints and exits, it has no screen to serve")
    for option, why in WRITES_ON_SERVER.get(args.command, {}).items():
        if getattr(args, option.lstrip("-").replace("-", "_"), None) is not None:
            raise SettingsError(f"serve: {option} would write on this machine from every browser tab; {why}")
    prepare(args)
    return args


def public_url(host: str, port: int) -> str:
    """Where a browser finds the server: the page tells it to open its websocket there."""
    if host in WILDCARD_HOSTS:
        host = _lan_address()
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _lan_address() -> str:
    """This machine's address on its network (connecting a UDP socket sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the outgoing interface
            address: str = probe.getsockname()[0]  # an AF_INET socket's name is (host, port)
            return address
        except OSError:
            return socket.gethostname()


def _check_port_free(host: str, port: int) -> None:
    """Refuse a host or port the server could not listen on, before saying it serves."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise SettingsError(f"--host {host}: {e.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server sets it
        try:
            sock.bind(address)
        except OSError as e:
            raise SettingsError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def banner(title: str, host: str, url: str, max_sessions: int, cold: str | None = None) -> str:
    """What the server says when it starts: where it listens, who can connect, how many, and
    why tabs start cold where they do."""
    if host in WILDCARD_HOSTS:
        where = f"on every network interface: anyone who can reach {url} can open it"
    else:
        where = f"on {host} only" + (": no other machine can connect" if _loopback(host) else "")
    lines = (
        f"bpe-tui: serving `{title}` at {url}\n  listening {where}\n"
        f"  each browser tab runs its own app process, at most {max_sessions} at once; Ctrl+C stops the server"
    )
    return lines if cold is None else f"{lines}\n  each tab starts a new Python, slower than forking a warm one: {cold}"


def class_full(max_sessions: int) -> str:
    """What a browser is told when every session is taken."""
    are = "session is" if max_sessions == 1 else "sessions are"
    return f"The class is full: {max_sessions} {are} open. Try again when someone leaves."


def full_page(title: str, max_sessions: int) -> str:
    """The page a browser gets instead of the app when every session is taken."""
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>\n'
        f'<body style="font-family: sans-serif; margin: 3em"><p>{class_full(max_sessions)}</p></body></html>\n'
    )


def run_serve(args: argparse.Namespace, served: list[str], parser: argparse.ArgumentParser, prepare: Prepare, run: Run, warm: Warm) -> int:
    try:
        from aiohttp import web
        from textual_serve.server import Server
    except ImportError:
        raise BpeError("serve needs textual-serve: pip install 'bpe-tui[web]'") from None
    served = served or DEFAULT_SERVED
    served_args = check_served(served, parser, prepare)
    if not 1 <= args.port <= 65535:
        raise SettingsError(f"--port {args.port}: not a port number (1-65535)")
    if args.max_sessions < 1:
        raise SettingsError(f"--max-sessions {args.max_sessions}: at least 1 browser tab must be able to open the app")
    cap = args.max_sessions
    _check_port_free(args.host, args.port)
    url = args.public_url or public_url(args.host, args.port)
    title = shlex.join(["bpe-tui", *served])
    reason = cold()
    lines = banner(title, args.host, url, cap, reason)
    full = full_page(title, cap)
    warm_class = None
    if reason is None:  # the tabs run the command as parsed, not as ``prepare`` filled it in
        warm_class = WarmClass(run, warm, served_args, parser.parse_args(served), _tab_environment(title))

    class BpeServer(Server):  # here, as textual-serve is imported only to serve
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.tabs: set[asyncio.Task[Any]] = set()
            """The handlers of the open tabs: stopping the server ends their apps at once."""
            self.door: asyncio.Task[None] | None = None
            """Letting in the tabs' launchers, when tabs fork warm."""

        async def handle_index(self, request: Any) -> Any:
            if len(self.tabs) >= cap:
                return web.Response(status=503, text=full, content_type="text/html", headers={"Retry-After": "60"})
            return await super().handle_index(request)

        async def handle_websocket(self, request: Any) -> Any:
            # Checked again here, where the app process would start: a page loaded while a
            # session was free may connect once it is taken. No await between check and add.
            if len(self.tabs) >= cap:
                return web.Response(status=503, text=class_full(cap))
            tab = asyncio.current_task()
            assert tab is not None
            self.tabs.add(tab)
            try:
                return await super().handle_websocket(request)
            finally:
                self.tabs.discard(tab)

        async def on_shutdown(self, app: object) -> None:
            # Cancelled, a tab's handler tells its app to quit and waits for it (textual-serve's
            # own shutdown would first wait for the browser to hang up).
            tabs = list(self.tabs)
            for tab in tabs:
                tab.cancel()
            await asyncio.gather(*tabs, return_exceptions=True)
            if warm_class is not None and self.door is not None:
                self.door.cancel()
                await warm_class.ended()

        def initialize_logging(self) -> None:
            super().initialize_logging()
            logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # not a line per request

        async def on_startup(self, app: object) -> None:  # instead of textual-serve's banner
            print(lines, flush=True)
            if warm_class is not None:
                self.door = asyncio.create_task(warm_class.let_in())

    command = served_command(served) if warm_class is None else warm_class.command()
    try:
        BpeServer(command, host=args.host, port=args.port, title=title, public_url=url).serve()
    finally:
        if warm_class is not None:
            warm_class.close()
    return 0


def _tab_environment(title: str) -> dict[str, str]:
    """The environment textual-serve gives each tab's app: the warm parent imports Textual
    in it, as Textual reads its driver, colours and frame rate when imported."""
    from textual_serve.app_service import AppService
    from textual_serve.download_manager import DownloadManager

    async def unused(*_: object) -> None:
        """A tab's output goes nowhere: this service only describes the environment."""

    service = AppService(title, write_bytes=unused, write_str=unused, close=unused, download_manager=DownloadManager())
    return service._build_environment()


def _loopback(host: str) -> bool:
    try:
        # The addresses are IPv4 or IPv6 ones, (ip, port, ...) with a string ip; typeshed also allows (int, bytes).
        return all(isinstance(ip, str) and (ip.startswith("127.") or ip == "::1") for *_, (ip, *_) in socket.getaddrinfo(host, None))
    except socket.gaierror:
        return False
