"""``bpe-tui decode``: print the text of token ids (U+FFFD where a token ends mid-character),
and a newline after it on a terminal."""

from __future__ import annotations

import argparse
import re
import sys

from engine import BpeError, Tokenizer

_SEPARATORS = re.compile(r"[\s,\[\]]+")
"""Between ids read from stdin: spaces, commas, brackets (a JSON list of ids works too)."""


def parse_ids(words: list[str]) -> list[int]:
    ids = []
    for word in words:
        if not word.isascii() or not word.isdigit():
            raise BpeError(f"not a token id: {word!r} (ids are integers from 0 up)")
        ids.append(int(word))
    return ids


def run_decode(args: argparse.Namespace) -> int:
    tokenizer = Tokenizer.load(args.model, args.pattern)
    words = args.ids or [w for w in _SEPARATORS.split(sys.stdin.read()) if w]
    ids = parse_ids(words)
    try:
        text = tokenizer.decode(ids)
    except ValueError as e:
        raise BpeError(f"{args.model}: {e}") from None
    sys.stdout.buffer.write(text.encode("utf-8"))
    if sys.stdout.isatty():  # the shell's prompt on a line of its own; piped, the text exactly
        sys.stdout.buffer.write(b"\n")
    sys.stdout.buffer.flush()
    return 0
