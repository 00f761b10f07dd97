"""The text as token spans: each token in its own colour with its id underneath.

Tokens alternate between two backgrounds so every boundary shows; a one-column gap keeps
the boundaries visible without colour too. A row ends after a token holding a newline,
so the text keeps its line breaks. A token holding part of a character names it, read within
the text the spans make (``named_spans``: ``五₁₋₂`` ``五₃``). ``span_rows`` and ``row_lines`` lay the spans out for
any width; the ``TokenSpans`` widget and the headless ``bpe-tui encode`` both print with them.
The widget draws only the rows in view; laying the spans out still covers the whole text.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from bpe_tui.common.tokens import Piece, pieces_text, raw_bytes, show_token, text_pieces, token_text
from engine import Tokenizer


class Span(NamedTuple):
    """One token on screen (a tuple: quick to make by the thousand)."""

    token: bytes
    id: int
    style: Style
    shown: tuple[Piece, ...] | None = None
    """Its readable form within the text (``named_spans``); None: the token on its own."""


@dataclass(frozen=True, slots=True)
class SpanStyles:
    """How spans are coloured; ``id`` is added to a span's style on its id line."""

    even: Style
    odd: Style
    special: Style
    id: Style
    focus: Style = Style()
    """Added to the tokens of the pre-token being worked on."""
    merge: Style = Style()
    """Replaces the colour of the pair that merges next."""


HEADLESS_STYLES = SpanStyles(
    even=Style(color="white", bgcolor="blue"),
    odd=Style(color="white", bgcolor="magenta"),
    special=Style(color="black", bgcolor="yellow", bold=True),
    id=Style(dim=True),
)
"""Token colours for the terminal, where no stylesheet applies (``--headless``)."""


def named_spans(spans: list[Span], raw: bool = False) -> list[Span]:
    """``spans`` read as the one text they make, so a token holding part of a character
    names it (``raw``: each token's bytes alone, as ``\\xe4\\xba``)."""
    if raw:
        return [span._replace(shown=None) for span in spans]
    pieces = text_pieces([span.token for span in spans])
    return [span._replace(shown=tuple(shown)) for span, shown in zip(spans, pieces, strict=True)]


def _cell_width(span: Span) -> int:
    return _width(span.token, span.id, span.shown)


@lru_cache(maxsize=1 << 16)
def _width(token: bytes, token_id: int, shown: tuple[Piece, ...] | None) -> int:
    text = show_token(token) if shown is None else "".join(piece for piece, _ in shown)
    return max(cell_len(text), len(str(token_id)))


def span_rows(spans: list[Span], width: int) -> list[range]:
    """Which spans go on each row when wrapped at ``width`` cells (at least one row)."""
    rows: list[range] = []
    start = x = 0
    for n, span in enumerate(spans):
        w = _cell_width(span)
        if x and x + 1 + w > width:
            rows.append(range(start, n))
            start, x = n, 0
        x += w + 1 if x else w
        if span.token.endswith(b"\n"):
            rows.append(range(start, n + 1))
            start, x = n + 1, 0
    if start < len(spans) or not rows:
        rows.append(range(start, len(spans)))
    return rows


def row_lines(spans: list[Span], id_style: Style) -> tuple[Text, Text]:
    """One row: the tokens' text, and their ids below, each padded to the wider of the two."""
    tokens, ids = Text(no_wrap=True), Text(no_wrap=True)
    for span in spans:
        if tokens:
            tokens.append(" ")
            ids.append(" ")
        w = _cell_width(span)
        shown = token_text(span.token, span.style) if span.shown is None else pieces_text(span.shown, span.style)
        shown.pad_right(w - shown.cell_len)
        tokens.append_text(shown)
        ids.append(str(span.id).ljust(w), span.style + id_style)
    return tokens, ids


def final_spans(tokenizer: Tokenizer, ids: list[int], styles: SpanStyles) -> list[Span]:
    """Spans of a finished encode."""
    special = set(tokenizer.special_ids.values())
    return named_spans(
        [Span(tokenizer.vocab[i], i, styles.special if i in special else (styles.odd if n % 2 else styles.even)) for n, i in enumerate(ids)]
    )


class TokenSpans(ScrollView, can_focus=True, inherit_bindings=False):
    """A text as tokens coloured with their ids below (a step of the encode, a compared row)."""

    # Arrows and pages scroll; `home` and `end` are left to the screen's stepping keys.
    BINDINGS = [
        Binding("up", "scroll_up", show=False),
        Binding("down", "scroll_down", show=False),
        Binding("left", "scroll_left", show=False),
        Binding("right", "scroll_right", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown", "page_down", show=False),
    ]

    COMPONENT_CLASSES = {
        "token-spans--even",
        "token-spans--odd",
        "token-spans--special",
        "token-spans--id",
        "token-spans--focus",
        "token-spans--merge",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._id_style: Style | None = None
        """Set once there are spans to show."""
        self._spans: list[Span] = []
        self._rows: list[range] = []
        self._strips: dict[int, tuple[Strip, Strip]] = {}
        """Rendered rows, filled as they come into view."""
        self._width = -1

    def styles_for_spans(self) -> SpanStyles:
        def get(name: str) -> Style:
            return self.get_component_rich_style(name, partial=True)

        return SpanStyles(
            even=get("token-spans--even"),
            odd=get("token-spans--odd"),
            special=get("token-spans--special"),
            id=get("token-spans--id"),
            focus=get("token-spans--focus"),
            merge=get("token-spans--merge"),
        )

    def show(self, spans: list[Span], first: int | None = None) -> None:
        """Show ``spans`` (coloured with ``styles_for_spans``), scrolled to span ``first``;
        None: from the start."""
        self._id_style = self.get_component_rich_style("token-spans--id", partial=True)
        self._spans = named_spans(spans, raw_bytes(self))
        self._layout()
        if first is None:
            self.scroll_home(animate=False, immediate=True)
        else:
            self.scroll_to_span(first)

    def scroll_to_span(self, index: int) -> None:
        """Scroll the row holding span ``index`` into view."""
        row = self._row_of(index)
        self.scroll_to_region(Region(0, 2 * row, 1, 2), animate=False, immediate=True)

    def restyle(self, index: int, style: Style) -> None:
        """Give span ``index`` another style, redrawing only its row."""
        self._spans[index] = self._spans[index]._replace(style=style)
        self._strips.pop(self._row_of(index), None)
        self.refresh()

    def _row_of(self, index: int) -> int:
        return bisect_right([r.start for r in self._rows], index) - 1

    def _layout(self) -> None:
        self._width = self.scrollable_content_region.width
        self._rows = span_rows(self._spans, max(self._width, 1))
        self._strips.clear()
        self.virtual_size = Size(self._width, 2 * len(self._rows))
        self.refresh()

    def on_resize(self) -> None:
        if self._id_style is not None and self.scrollable_content_region.width != self._width:
            self._layout()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.scrollable_content_region.width
        row, below = divmod(index, 2)
        if row >= len(self._rows) or self._id_style is None:
            return Strip.blank(width, self.rich_style)
        if row not in self._strips:
            r = self._rows[row]
            tokens, ids = row_lines(self._spans[r.start : r.stop], self._id_style)
            console = self.app.console
            self._strips[row] = (
                Strip(tokens.render(console), tokens.cell_len),
                Strip(ids.render(console), ids.cell_len),
            )
        return self._strips[row][below].crop_extend(scroll_x, scroll_x + width, self.rich_style)
