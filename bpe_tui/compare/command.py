"""``bpe-tui compare``: one text, many tokenizers side by side; ``--headless`` prints them.

Rows: character, byte, word (the words of ``--corpus``), BPE and WordPiece trained on
``--corpus`` up to ``--vocab-size``, then every ``--model``. The reference the others are marked against is
the first ``--model``, else the trained BPE. ``--json`` prints the same comparison as
``{"text", "bytes", "characters", "reference", "rows": [...]}``, each row with its counts
and tokens ``{"id", "start", "end", "token", "unknown", "differs"}`` (``start`` and ``end``
are UTF-8 byte offsets; ``token`` is the vocabulary entry as text).
"""

from __future__ import annotations

import argparse
import json
from contextlib import nullcontext
from pathlib import Path

from rich.console import Console
from rich.style import Style
from rich.table import Table

from bpe_tui.common.corpus import SAMPLE, sample_corpus
from bpe_tui.common.text_input import read_text
from bpe_tui.common.token_spans import HEADLESS_STYLES, named_spans, row_lines, span_rows
from bpe_tui.compare.widgets.tokenizer_row import RowStyles, count_widths, row_spans, summary, title
from engine.compare.comparison import BPE_ROW, Row, compare, corpus_tokenizers, load_span_tokenizer
from engine.corpus.sources import open_binary
from engine.errors import SettingsError
from engine.formats.rank_files import is_rank_file

HEADLESS_ROW_STYLES = RowStyles(
    HEADLESS_STYLES,
    differs_even=Style(color="black", bgcolor="dark_orange3"),
    differs_odd=Style(color="black", bgcolor="orange3"),
    unknown=Style(color="white", bgcolor="red", bold=True),
)


def run_compare(args: argparse.Namespace) -> int:
    if args.pattern is not None and not any(is_rank_file(path) for path in args.model or []):
        raise SettingsError("--pattern is the pre-tokenizer of a .tiktoken rank file: give one with --model")
    models = [load_span_tokenizer(path, args.pattern) for path in args.model or []]  # bad files first, before any work
    if args.corpus:
        open_binary(args.corpus).close()
    with nullcontext(Path(args.corpus)) if args.corpus else sample_corpus() as corpus:
        ladder = corpus_tokenizers(corpus, args.vocab_size, name=corpus.name if args.corpus else SAMPLE, errors=args.errors)
    tokenizers = [*ladder, *models]
    reference = len(ladder) if models else BPE_ROW
    text = read_text(args)
    if args.headless or args.json:
        rows = compare(text or "", tokenizers, reference)
        print_json(text or "", rows, reference) if args.json else print_rows(rows, reference)
        return 0
    from bpe_tui.app import BpeApp
    from bpe_tui.compare.screen import CompareScreen

    BpeApp(CompareScreen(tokenizers, text, reference)).run()
    return 0


def print_json(text: str, rows: list[Row], reference: int) -> None:
    out = {
        "text": text,
        "bytes": len(text.encode("utf-8")),
        "characters": len(text),
        "reference": rows[reference].tokenizer.name,
        "rows": [
            {
                "name": row.tokenizer.name,
                "kind": row.tokenizer.kind,
                "vocab_size": row.tokenizer.vocab_size,
                "tokens": len(row.tokens),
                "bytes_per_token": round(row.bytes_per_token, 4),
                "unknown": row.unknown,
                "differing": row.differing,
                "spans": [
                    {
                        "id": t.id,
                        "start": t.start,
                        "end": t.end,
                        "token": t.piece.decode("utf-8", errors="replace"),
                        "unknown": t.unknown,
                        "differs": differs,
                    }
                    for t, differs in zip(row.tokens, row.differs, strict=True)
                ],
            }
            for row in rows
        ],
    }
    print(json.dumps(out, ensure_ascii=False))


def print_rows(rows: list[Row], reference: int) -> None:
    """Each row's summary and coloured tokens with ids, then the counts as one table."""
    console = Console(highlight=False)
    widths = count_widths(rows, reference)
    for n, row in enumerate(rows):
        console.print(summary(row, n == reference, widths))
        spans = named_spans(row_spans(row, HEADLESS_ROW_STYLES))
        for r in span_rows(spans, console.width):
            for line in row_lines(spans[r.start : r.stop], HEADLESS_STYLES.id):
                console.print(line, crop=False, overflow="ignore")
        console.print()
    table = Table(title=f"differ: tokens whose exact span {rows[reference].tokenizer.name} does not have", title_justify="left")
    table.add_column("tokenizer")
    for column in ("vocab", "tokens", "bytes/token", "unknown", "differ"):
        table.add_column(column, justify="right", no_wrap=True)
    for n, row in enumerate(rows):
        table.add_row(
            title(row.tokenizer),
            f"{row.tokenizer.vocab_size:,}",
            f"{len(row.tokens):,}",
            f"{row.bytes_per_token:.2f}",
            f"{row.unknown:,}",
            "reference" if n == reference else f"{row.differing:,}",
        )
    console.print(table)
