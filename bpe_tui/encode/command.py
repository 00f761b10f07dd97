"""``bpe-tui encode``: open the encode view, or with ``--headless`` print the tokens (with
``--out``, encode whole files into an ids file: ``encode.dataset_command``).

Headless output is the text as coloured token spans with each id below, then the counts.
``--json`` prints instead a JSON list of ``{"id", "bytes", "text"}`` per token: ``bytes``
is the token's exact bytes as a list of integers, ``text`` their UTF-8 decoding with
U+FFFD for a partial character.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from rich.console import Console

from bpe_tui.common.text_input import read_text
from bpe_tui.common.token_spans import HEADLESS_STYLES, final_spans, row_lines, span_rows
from bpe_tui.encode.widgets.encode_stats import compression
from engine import SettingsError, Tokenizer

DATASET_FLAGS: dict[str, Callable[[argparse.Namespace], object]] = {
    "--eot": lambda a: a.eot,
    "--text-field": lambda a: a.text_field != "text",
    "--workers": lambda a: a.workers is not None,
    "--errors": lambda a: a.errors != "strict",
    "--skip-bad-records": lambda a: a.skip_bad_records,
    "--skip-bad-inputs": lambda a: a.skip_bad_inputs,
    "--stdin-format": lambda a: a.stdin_format is not None,
}
"""The options of ``--out`` alone, each with whether it is given."""


def print_tokens(tokenizer: Tokenizer, text: str, as_json: bool) -> None:
    ids = tokenizer.encode(text)
    if as_json:
        vocab = tokenizer.vocab
        tokens = [{"id": i, "bytes": list(vocab[i]), "text": tokenizer.decode([i])} for i in ids]
        print(json.dumps(tokens, ensure_ascii=False))
        return
    console = Console(highlight=False)
    spans = final_spans(tokenizer, ids, HEADLESS_STYLES)
    for row in span_rows(spans, console.width):
        for line in row_lines(spans[row.start : row.stop], HEADLESS_STYLES.id):
            console.print(line, crop=False, overflow="ignore")
    size, chars, per_token = compression(text, len(ids))
    console.print(f"{len(ids)} tokens · {size} bytes · {chars} characters · {per_token:.2f} bytes per token")
    console.print(f"as plain UTF-8 bytes: {size} tokens · 1.00 bytes per token", style="dim")


def prepare(args: argparse.Namespace) -> tuple[Tokenizer, str | None]:
    """The tokenizer and the text, or the one line saying why not, before a screen opens."""
    if args.out is not None:
        raise SettingsError("--out encodes files into ids, with no screen to show")
    given = [flag for flag, on in DATASET_FLAGS.items() if on(args)]
    if given:
        raise SettingsError(f"{given[0]} goes with --out IDS (encoding files into ids)")
    return Tokenizer.load(args.model, args.pattern), read_text(args)


def run_encode(args: argparse.Namespace) -> int:
    if args.out is not None:
        from bpe_tui.encode.dataset_command import run_dataset

        return run_dataset(args)
    tokenizer, text = prepare(args)
    if args.headless or args.json:
        print_tokens(tokenizer, text or "", args.json)
        return 0
    from bpe_tui.app import BpeApp
    from bpe_tui.encode.screen import EncodeScreen

    BpeApp(EncodeScreen(tokenizer, text)).run()
    return 0
