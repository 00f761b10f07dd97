"""One tokenizer's cut of the text: a summary line, then its tokens coloured with ids below.

Tokens alternate between two colours as in the encode view. A token the reference row does
not also have (no token there with exactly its span) takes a warm colour instead, an unknown
token (not in the vocabulary) red; the token under the text cursor is underlined in every
row, so the same place can be read across all of them.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from bpe_tui.common.token_spans import Span, SpanStyles, TokenSpans
from engine.compare.baselines import SpanTokenizer
from engine.compare.comparison import Row


@dataclass(frozen=True, slots=True)
class RowStyles:
    """The encode view's span colours, and those a comparison adds."""

    spans: SpanStyles
    differs_even: Style
    differs_odd: Style
    unknown: Style


def row_spans(row: Row, styles: RowStyles) -> list[Span]:
    """The row's tokens as spans: special, unknown, differing or plain, alternating."""
    out = []
    for n, (token, differs) in enumerate(zip(row.tokens, row.differs, strict=True)):
        if token.special:
            style = styles.spans.special
        elif token.unknown:
            style = styles.unknown
        elif differs:
            style = styles.differs_odd if n % 2 else styles.differs_even
        else:
            style = styles.spans.odd if n % 2 else styles.spans.even
        out.append(Span(token.piece, token.id, style))
    return out


def title(tokenizer: SpanTokenizer) -> Text:
    """Its name, and its kind unless the name starts with it (``gpt2 BPE``, ``character``)."""
    text = Text(tokenizer.name, style="bold")
    if tokenizer.name.split(" ")[0] != tokenizer.kind:
        text.append(f" {tokenizer.kind}", "italic")
    return text


def counts(row: Row, reference: bool) -> list[Text]:
    """The summary's counts: tokens, bytes per token, unknown tokens, tokens that differ."""
    return [
        Text(f"{len(row.tokens):,} tokens"),
        Text(f"{row.bytes_per_token:.2f} bytes/token"),
        Text(f"{row.unknown:,} unknown", style="bold red" if row.unknown else "dim"),
        Text("reference", style="bold reverse") if reference else Text(f"{row.differing:,} differ"),
    ]


def summary(row: Row, reference: bool, widths: list[int]) -> Table:
    """Name, kind and vocabulary size, then the counts in columns ``widths`` wide, so that
    they line up across rows."""
    name = title(row.tokenizer)
    name.append(f" vocab {row.tokenizer.vocab_size:,}", "dim")
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    for width in widths:
        grid.add_column(justify="right", no_wrap=True, min_width=width)
    grid.add_row(name, *counts(row, reference))
    return grid


def count_widths(rows: list[Row], reference: int) -> list[int]:
    """The widest of each count over ``rows``."""
    cells = [counts(row, n == reference) for n, row in enumerate(rows)]
    return [max(cell.cell_len for cell in column) for column in zip(*cells, strict=True)]


class RowTokens(TokenSpans):
    """The tokens of one row; keeps the underline on the token under the text cursor."""

    COMPONENT_CLASSES = TokenSpans.COMPONENT_CLASSES | {
        "row-tokens--differs-even",
        "row-tokens--differs-odd",
        "row-tokens--unknown",
    }

    def __init__(self) -> None:
        super().__init__()
        self._starts: list[int] = []
        self._cursor: int | None = None
        """Index of the underlined span."""
        self._plain: Style | None = None
        """Its style before the underline."""

    def row_styles(self) -> RowStyles:
        def get(name: str) -> Style:
            return self.get_component_rich_style(name, partial=True)

        return RowStyles(
            self.styles_for_spans(),
            get("row-tokens--differs-even"),
            get("row-tokens--differs-odd"),
            get("row-tokens--unknown"),
        )

    def show_row(self, row: Row, cursor: int) -> None:
        """Show ``row``, the token at byte offset ``cursor`` underlined and in view."""
        self._starts = [t.start for t in row.tokens]
        self._cursor = None
        self.show(row_spans(row, self.row_styles()))
        self.follow(cursor)

    def follow(self, cursor: int) -> None:
        """Underline the token holding byte offset ``cursor`` (the last one before it where no
        token covers it) and scroll to it."""
        if not self._starts:
            return
        index = max(bisect_right(self._starts, cursor) - 1, 0)
        if index == self._cursor:
            return
        if self._cursor is not None and self._plain is not None:
            self.restyle(self._cursor, self._plain)
        self._cursor, self._plain = index, self._spans[index].style
        self.restyle(index, self._plain + self.styles_for_spans().focus)
        self.scroll_to_span(index)


class TokenizerRow(Vertical):
    """A row of the comparison: its summary line above its tokens."""

    def compose(self) -> ComposeResult:
        yield Static(classes="summary")
        yield RowTokens()

    def show(self, row: Row, reference: bool, widths: list[int], cursor: int) -> None:
        self.query_one(".summary", Static).update(summary(row, reference, widths))
        self.query_one(RowTokens).show_row(row, cursor)

    def on_descendant_focus(self) -> None:
        """The whole row in view, its summary line too: the screen brings into view only the
        focused tokens, and only when they are cut off."""
        self.scroll_visible(animate=False)


class ComparedRows(VerticalScroll):
    """The rows share the height: each a summary line and whole lines of tokens and ids
    (pairs, so no ids line shows without its tokens), the spare pairs to the rows on top;
    past three lines each they scroll."""

    def on_resize(self, event: events.Resize) -> None:
        rows = self.query_children(TokenizerRow)
        if not rows:
            return
        pairs = max(1, (event.size.height // len(rows) - 1) // 2)
        spare = max(0, event.size.height - len(rows) * (1 + 2 * pairs)) // 2
        for n, row in enumerate(rows):
            row.styles.height = 1 + 2 * (pairs + (n < spare))
