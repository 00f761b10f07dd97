"""The compare view: one text, many tokenizers, one row each (seed lecture 003).

Every row re-tokenizes shortly after typing stops, in a thread so that typing goes on. One
row is the reference: tokens of the other rows that it does not also have are coloured
apart. The token under the text cursor is underlined in every row, and every row scrolls to
it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static, TextArea
from textual.widgets.text_area import Document
from textual.worker import get_current_worker

from bpe_tui.common.corpus import SAMPLE, sample_corpus
from bpe_tui.common.navigation import over_another
from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.compare.widgets.tokenizer_row import ComparedRows, RowStyles, RowTokens, TokenizerRow, count_widths
from engine.compare.baselines import SpanTokenizer
from engine.compare.comparison import BPE_ROW, Row, against, compare, corpus_tokenizers

COMPARE_TEXT = "Hello, 🌍! 你好! The keeper's cat watched 1234 unbelievable waves.<|endoftext|>"
"""Shown when the view is opened without a text: the lecture's example and words the
bundled sample's vocabulary lacks."""
RETOKENIZE_AFTER = 0.15
"""Seconds without typing before the rows re-tokenize."""


class CompareScreen(Screen[None]):
    """``tokenizers`` side by side on one editable text, marked against ``reference``."""

    CSS_PATH = ["../common/tokens.tcss", "screen.tcss"]
    AUTO_FOCUS = "#text"

    BINDINGS = [
        Binding("escape", "leave_text", "Rows", tooltip="Leave the text for the rows (tab moves between them)", id="compare.leave"),
        Binding("slash", "edit_text", "Edit", tooltip="Move into the text box", id="compare.edit"),
        Binding("r", "reference", "Reference", tooltip="Mark differences against the focused row", id="compare.reference"),
        Binding("q", "back", "Back", tooltip="Back to the screen below", id="compare.back"),
        Binding("q", "quit_app", "Quit", tooltip="Quit bpe-tui", id="compare.quit"),
    ]

    SCREEN_HELP = ScreenHelp(
        title="the compare view",
        intro=(
            "One text, one row per tokenizer: the lecture's walk from characters to bytes, words "
            "and BPE, then any models you bring, side by side. The text is editable: shortly after "
            "typing stops every row re-tokenizes."
        ),
        panels=(
            (
                "the rows",
                "character: one token per code point, its id ord(ch); byte: one per UTF-8 byte, 256 "
                "of them; word: one per GPT-2 pre-token, from the corpus's words, <unk> for the "
                "rest; BPE: our byte-level BPE trained on the corpus; then each --model. The tokens "
                "are coloured with their ids underneath, as in the encode view.",
            ),
            (
                "the summary line of a row",
                "Its name, kind and vocabulary size; its tokens; bytes per token, the lecture's "
                "compression ratio (the text's bytes over its tokens: higher packs more text into "
                "each token); unknown tokens, in red (words not in the corpus, [UNK], <unk>); and "
                "how many of its tokens differ from the reference.",
            ),
            (
                "where the cuts differ (the line above the rows)",
                "One row is the reference: the first --model, else the trained BPE; r makes the "
                "focused row the reference. A token of another row is orange when the reference has "
                "no token with exactly its span (the same bytes, from the same start to the same "
                "end); tokens the reference shares keep the encode view's colours.",
            ),
            (
                "the cursor",
                "The token under the text cursor is underlined in every row, and every row scrolls "
                "to it, so one place in the text reads across all the tokenizers.",
            ),
        ),
    )
    """What ``?`` and ``bpe-tui explain compare`` say of this screen."""

    def __init__(self, tokenizers: Sequence[SpanTokenizer], text: str | None = None, reference: int = 0) -> None:
        super().__init__()
        self.tokenizers = list(tokenizers)
        self.text = COMPARE_TEXT if text is None else text
        self.reference = reference
        self.rows: list[Row] = []
        """The rows on screen: the text as it was when they were tokenized."""
        self._timer: Timer | None = None

    @classmethod
    def on_sample(cls, text: str | None = None, *more: SpanTokenizer) -> CompareScreen:
        """Character, byte, word and BPE built from the bundled sample corpus, then ``more``
        (the reference when given: the tokenizer the user came with)."""
        with sample_corpus() as path:
            tokenizers = corpus_tokenizers(path, name=SAMPLE)
        return cls([*tokenizers, *more], text, reference=len(tokenizers) if more else BPE_ROW)

    def compose(self) -> ComposeResult:
        text = TextArea(self.text, soft_wrap=True, id="text")
        text.border_title = "text  (type to re-tokenize · esc: rows)"
        yield text
        yield Static(id="legend")
        with ComparedRows(id="rows"):
            for _ in self.tokenizers:
                yield TokenizerRow()
        yield Footer()

    def on_mount(self) -> None:
        self.rows = compare(self.text, self.tokenizers, self.reference)
        # Shown once the widgets' styles are in place, as the legend and the rows take their
        # colours from them: a screen may be mounted before (Python 3.13 runs it so).
        self.call_after_refresh(self.show_all)

    def show_all(self) -> None:
        self.query_one("#legend", Static).update(self._legend())
        self.show_rows()
        # The legend speaks of the reference, often the last row: in view from the start.
        self.query(TokenizerRow)[self.reference].scroll_visible(animate=False)

    # -- the rows ------------------------------------------------------------------------------

    def show_rows(self) -> None:
        cursor = self._cursor()
        widths = count_widths(self.rows, self.reference)
        for n, (widget, row) in enumerate(zip(self.query(TokenizerRow), self.rows, strict=True)):
            widget.show(row, n == self.reference, widths, cursor)

    @work(thread=True, exclusive=True, group="tokenize")
    def retokenize(self, text: str, reference: int) -> None:
        """Tokenize ``text`` with every tokenizer in a thread, so that typing goes on meanwhile;
        the rows show it unless the text has changed again."""
        rows = compare(text, self.tokenizers, reference)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._tokenized, text, reference, rows)

    def _tokenized(self, text: str, reference: int, rows: list[Row]) -> None:
        if text == self.text:
            self.rows = rows if reference == self.reference else against(rows, self.reference)
            self.show_rows()

    def _legend(self) -> Text:
        """What the colours mean, in the colours."""
        styles: RowStyles = self.query_one(RowTokens).row_styles()
        return Text.assemble(
            ("cut", styles.differs_even),
            (" ", ""),
            ("differently", styles.differs_odd),
            (": the reference has no token with this span · ", ""),
            ("same", styles.spans.even),
            (" · ", ""),
            ("unknown", styles.unknown),
            no_wrap=True,
            overflow="ellipsis",
        )

    def _cursor(self) -> int:
        """The byte offset of the text cursor."""
        area = self.query_one("#text", TextArea)
        document = area.document
        assert isinstance(document, Document)  # a TextArea's document always is one (or a subclass)
        index = document.get_index_from_location(area.selection.end)
        return len(self.text[:index].encode("utf-8"))

    @on(TextArea.Changed, "#text")
    def _text_edited(self, event: TextArea.Changed) -> None:
        self.text = event.text_area.text
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(RETOKENIZE_AFTER, self._typing_paused)

    def _typing_paused(self) -> None:
        self._timer = None
        self.retokenize(self.text, self.reference)

    @on(TextArea.SelectionChanged, "#text")
    def _cursor_moved(self) -> None:
        if self._timer is None:  # else the rows are about to be redrawn anyway
            cursor = self._cursor()
            for tokens in self.query(RowTokens):
                tokens.follow(cursor)

    # -- actions -------------------------------------------------------------------------------

    def action_leave_text(self) -> None:
        self.query(RowTokens)[self.reference].focus()

    def action_edit_text(self) -> None:
        self.query_one("#text", TextArea).focus()

    def action_reference(self) -> None:
        if isinstance(self.focused, RowTokens):
            self.reference = list(self.query(RowTokens)).index(self.focused)
            self.rows = against(self.rows, self.reference)
            self.show_rows()

    def action_back(self) -> None:
        self.dismiss()

    def action_quit_app(self) -> None:
        self.app.exit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        editing = self.focused is not None and self.focused.id == "text"
        if action in ("edit_text", "leave_text"):
            return editing == (action == "leave_text")
        if action == "reference":
            return isinstance(self.focused, RowTokens) or None
        if action in ("back", "quit_app"):
            return over_another(self) == (action == "back")
        return True
