"""``bpe-tui encode``: open the encode view, or with ``--headless`` print the tokens (with
``--out``, encode whole files into an ids file: ``encode.dataset_command``).

Headless output is the text as coloured token spans with each id below, then the counts.
``--json`` prints instead a JSON list of ``{"id", "bytes", "text"}`` per token: ``bytes``
is the token's exact bytes as a list of integers, ``text`` their UTF-8 decoding with
U+FFFD for a partial character. A WordPiece, Unigram or SentencePiece model prints its
tokens as its vocabulary has them (``##ing``, ``▁the``, ``<0xE4>``, ``[UNK]``): ``text`` is
the entry, ``bytes`` its UTF-8. Without ``--headless`` the app opens the encode view of the
model's kind (``bpe_tui.app.encode_screen``): BPE's merge by merge, WordPiece's lookup by
lookup, Unigram's through each word's lattice; a SentencePiece ``.model`` has none yet.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console

from bpe_tui.common.text_input import read_text
from bpe_tui.common.token_spans import HEADLESS_STYLES, Span, final_spans, named_spans, row_lines, span_rows
from bpe_tui.encode.widgets.encode_stats import compression
from engine import SettingsError, Tokenizer

if TYPE_CHECKING:
    from engine.encode.sentencepiece_model import SentencePieceModel
    from engine.encode.sentencepiece_steps import SentencePieceLattices, SentencePieceMerges
    from engine.encode.tokenizer import AnyTokenizer
    from engine.encode.unigram import UnigramTokenizer
    from engine.encode.wordpiece import WordPieceTokenizer

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


def print_tokens(tokenizer: AnyTokenizer, text: str, as_json: bool) -> None:
    ids = tokenizer.encode(text)
    if as_json:
        if isinstance(tokenizer, Tokenizer):
            vocab = tokenizer.vocab
            tokens = [{"id": i, "bytes": list(vocab[i]), "text": tokenizer.decode([i])} for i in ids]
        else:
            tokens = [{"id": i, "bytes": list(tokenizer.token(i).encode()), "text": tokenizer.token(i)} for i in ids]
        print(json.dumps(tokens, ensure_ascii=False))
        return
    console = Console(highlight=False)
    spans = final_spans(tokenizer, ids, HEADLESS_STYLES) if isinstance(tokenizer, Tokenizer) else entry_spans(tokenizer, ids)
    for row in span_rows(spans, console.width):
        for line in row_lines(spans[row.start : row.stop], HEADLESS_STYLES.id):
            console.print(line, crop=False, overflow="ignore")
    size, chars, per_token = compression(text, len(ids))
    ratio = f" · {per_token:.2f} bytes per token" if ids else ""  # no tokens: no bytes per token
    console.print(f"{len(ids)} tokens · {size} bytes · {chars} characters{ratio}")
    console.print(f"as plain UTF-8 bytes: {size} tokens{' · 1.00 bytes per token' if size else ''}", style="dim")


def entry_spans(tokenizer: WordPieceTokenizer | UnigramTokenizer | SentencePieceModel, ids: list[int]) -> list[Span]:
    """Spans of an encode whose tokens are strings (WordPiece, Unigram, SentencePiece): each
    token as its vocabulary entry (``##ing``, ``▁the``)."""
    special = set(tokenizer.special_ids.values())
    styles = HEADLESS_STYLES
    return named_spans(
        [
            Span(tokenizer.token(i).encode(), i, styles.special if i in special else (styles.odd if n % 2 else styles.even))
            for n, i in enumerate(ids)
        ]
    )


def _model(args: argparse.Namespace) -> AnyTokenizer:
    """The model to encode with, or the one line saying why not."""
    if args.out is not None:
        raise SettingsError("--out encodes files into ids, with no screen to show")
    given = [flag for flag, on in DATASET_FLAGS.items() if on(args)]
    if given:
        raise SettingsError(f"{given[0]} goes with --out IDS (encoding files into ids)")
    return Tokenizer.load(args.model, args.pattern)


def prepare(
    args: argparse.Namespace,
) -> tuple[Tokenizer | WordPieceTokenizer | UnigramTokenizer | SentencePieceLattices | SentencePieceMerges, str | None]:
    """The tokenizer and the text, or the one line saying why not, before a screen opens: a
    SentencePiece model as the steps of its kind."""
    from engine.encode.sentencepiece_model import SentencePieceModel
    from engine.encode.sentencepiece_steps import sentencepiece_steps

    tokenizer = _model(args)
    if isinstance(tokenizer, SentencePieceModel):
        return sentencepiece_steps(tokenizer), read_text(args)
    return tokenizer, read_text(args)


def run_encode(args: argparse.Namespace) -> int:
    if args.out is not None:
        from bpe_tui.encode.dataset_command import run_dataset

        return run_dataset(args)
    if args.headless or args.json:
        model = _model(args)
        print_tokens(model, read_text(args) or "", args.json)
        return 0
    tokenizer, text = prepare(args)
    from bpe_tui.app import BpeApp, encode_screen

    BpeApp(encode_screen(tokenizer, text)).run()
    return 0
