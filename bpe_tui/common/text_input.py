"""The text a command works on: ``--text``, ``--file`` (``-``: standard input), or standard
input when headless."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine import BpeError, SettingsError
from engine.errors import not_utf8, unreadable


def read_text(args: argparse.Namespace) -> str | None:
    """The text to encode: ``--text``, ``--file``, stdin when headless, else None. The app
    reads the keyboard from standard input: ``--file -`` goes with ``--headless``."""
    if args.text is not None:
        text: str = args.text
        return text
    if args.file is not None:
        if len(args.file) > 1:
            raise SettingsError("several --file inputs are encoded into a file: give --out IDS")
        if args.file[0] == "-" and not (args.headless or args.json):
            raise SettingsError("--file -: the app reads the keyboard from standard input: reading the text from it needs --headless")
        path = Path(args.file[0])
        try:
            data = sys.stdin.buffer.read() if args.file[0] == "-" else path.read_bytes()
        except OSError as e:
            raise BpeError(unreadable(path, e)) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BpeError(not_utf8(path, e.start)) from None
    if args.headless or args.json:
        return sys.stdin.read()
    return None
