"""The encode view: step through an encode merge by merge, as in the lecture's printout.

Step ``k`` of ``total`` is the text after the first ``k`` merges, pre-token by pre-token
(see ``EncodeWalk``). The view opens on the raw bytes with the stepping keys live (opened
by ``bpe-tui check``, at the pre-token where a student's ids first differ, a note saying
so); editing the text re-encodes it at once and shows the final tokens.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Static, TextArea

from bpe_tui.common.navigation import OpenCompare, over_another
from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.common.tokens import show_token
from bpe_tui.encode.walk import EncodeWalk, MergeModel, step_spans
from bpe_tui.encode.widgets.encode_stats import EncodeStats
from bpe_tui.encode.widgets.pair_ranks import PairRanks
from engine.compare.comparison import model_row
from engine.encode.sentencepiece_steps import SentencePieceMerges

SAMPLE_TEXT = "Hello world! A tech talk on tokenizers: 你好, BPE."
"""Shown when the view is opened without a text."""


class EncodeScreen(Screen[None]):
    """Encode a text with ``tokenizer`` and walk through every merge."""

    CSS_PATH = ["screen.tcss", "../common/tokens.tcss"]
    AUTO_FOCUS = "#tokens"

    BINDINGS = [
        Binding("n", "next_merge", "Next", tooltip="Apply the merge with the lowest rank", id="encode.next"),
        Binding("p", "previous_merge", "Undo", tooltip="Undo the last merge", id="encode.previous"),
        Binding("e", "to_end", "End", tooltip="Jump to the final tokens", id="encode.end"),
        Binding("home", "to_start", "Bytes", tooltip="Back to the raw bytes, before any merge", id="encode.start"),
        Binding("slash", "edit_text", "Edit", tooltip="Move into the text box", id="encode.edit"),
        Binding("escape", "leave_text", "Stepping", tooltip="Back to stepping", id="encode.leave"),
        Binding(
            "c", "compare", "Compare", tooltip="Compare this text across character, byte, word and BPE tokenizers", id="encode.compare"
        ),
        Binding("q", "back", "Back", tooltip="Back to the training screen, when opened from it", id="encode.back"),
        Binding("q", "quit_app", "Quit", tooltip="Quit bpe-tui, when opened on its own", id="encode.quit"),
    ]

    SCREEN_HELP = ScreenHelp(
        title="the encode view",
        intro=(
            "Encoding a text with a trained tokenizer, as GPT-2 does. The text is cut into "
            "pre-tokens, each pre-token into bytes; then, inside each pre-token, the adjacent pair "
            "with the lowest merge rank (its 0-based line in merges.txt, the order training "
            "learned it) merges first, until no pair is in the merge list. step K/TOTAL counts "
            "merges over the whole text. A SentencePiece BPE model (.model) steps the same way "
            "through its own rules: the text as its normalizer makes it (▁ for each space), cut "
            "into words before each ▁, each word into characters (a user-defined symbol whole); "
            "the pair that makes the piece of highest score merges first, so a pair's rank is "
            "its score's place among the model's scores, highest first."
        ),
        panels=(
            (
                "text",
                "The text being encoded. / (or tab) moves into it: it re-encodes as you type and "
                "shows the final tokens; esc goes back to stepping.",
            ),
            (
                "step K/TOTAL (the line below the text)",
                "The merge that comes next: its two tokens, its merge rank, and the pre-token it happens in.",
            ),
            (
                "tokens and ids",
                "The text as token spans in alternating colours, each id underneath. The pre-token "
                "being worked on is underlined, the pair that merges next is green and special "
                "tokens are gold.",
            ),
            (
                "pre-token",
                "The lecture's printout for ␣tech, live: the parts of the pre-token being worked "
                "on, every adjacent pair with its merge rank or “not in merges”, and the lowest "
                "rank marked: that pair merges now. When no pair is in the merges the pre-token "
                "is done.",
            ),
            (
                "stats",
                "Bytes, characters, tokens now and at the end, and bytes per token, against the "
                "same text as plain UTF-8 bytes (one token per byte).",
            ),
        ),
    )
    """What ``?`` and ``bpe-tui explain encode`` say of this screen."""

    def __init__(self, tokenizer: MergeModel, text: str | None = None, at: int | None = None, note: str = "") -> None:
        """``at``: open just before the merges of that pre-token (an index into the text's
        ``encode_steps``), with ``note`` before the step (``bpe-tui check``)."""
        super().__init__()
        self.tokenizer = tokenizer
        self.walk = EncodeWalk(tokenizer, SAMPLE_TEXT if text is None else text)
        self.k = 0 if at is None else self.walk.start_of(at)
        """Merges applied so far."""
        self.note = note
        """Said before the step until the text is edited (``check: your ids differ at token 3``)."""

    def compose(self) -> ComposeResult:
        text = TextArea(self.walk.text, soft_wrap=True, id="text")
        text.border_title = "text  (/ to edit, esc to leave)"
        yield text
        yield Static(id="status")
        spans = TokenSpans(id="tokens")
        spans.border_title = "tokens and ids"
        yield spans
        with Horizontal(id="details"):
            yield PairRanks(self.tokenizer, id="pairs")
            stats = EncodeStats(id="stats")
            stats.border_title = "stats"
            yield stats
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # Shown once the widgets' styles are in place, as the pairs and tokens take their
        # colours from them: a screen may be mounted before (Python 3.13 runs it so).
        self.call_after_refresh(self.show_step)

    # -- showing a step --------------------------------------------------------------------

    def show_step(self) -> None:
        walk, k = self.walk, self.k
        focus = walk.focus(k)
        tokens = self.query_one(TokenSpans)
        tokens.show(*step_spans(self.tokenizer, walk, k, tokens.styles_for_spans()))
        pairs = self.query_one(PairRanks)
        pairs.show_round(focus)
        pairs.border_title = (
            f"pre-token {focus.index + 1}/{len(walk.traces)} “{show_token(focus.trace.text.encode())}”" if focus else "pre-token"
        )
        self.query_one(EncodeStats).show_step(walk, k)
        self.query_one("#status", Static).update(self._status())
        self.refresh_bindings()

    def _status(self) -> str:
        walk, k = self.walk, self.k
        head = f"step {k}/{walk.total}"
        if self.note:
            head = f"{self.note} · {head}"
        focus = walk.focus(k)
        if k < walk.total and focus is not None:
            step = focus.step
            assert step.chosen is not None  # each step before walk.total is a merge
            vocab = self.tokenizer.vocab
            left, right = step.parts[step.chosen], step.parts[step.chosen + 1]
            rank = step.ranks[step.chosen]
            return (
                f"{head} · next: {show_token(vocab[left])} + {show_token(vocab[right])} (merge rank {rank})"
                f" in “{show_token(focus.trace.text.encode())}”"
            )
        if walk.total:
            return f"{head} · done: {len(walk.ids)} tokens"
        return f"{head} · no merges apply to this text"

    def _go(self, k: int) -> None:
        k = max(0, min(k, self.walk.total))
        if k != self.k:
            self.k = k
            self.show_step()

    # -- actions -----------------------------------------------------------------------------

    def action_next_merge(self) -> None:
        self._go(self.k + 1)

    def action_previous_merge(self) -> None:
        self._go(self.k - 1)

    def action_to_end(self) -> None:
        self._go(self.walk.total)

    def action_to_start(self) -> None:
        self._go(0)

    def action_edit_text(self) -> None:
        self.query_one("#text", TextArea).focus()

    def action_leave_text(self) -> None:
        self.query_one(TokenSpans).focus()

    def action_compare(self) -> None:
        model = self.tokenizer.model if isinstance(self.tokenizer, SentencePieceMerges) else self.tokenizer
        self.post_message(OpenCompare(self.walk.text, model_row(model, "this tokenizer")))

    def action_back(self) -> None:
        self.dismiss()

    def action_quit_app(self) -> None:
        self.app.exit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Keys that cannot move the step any further show dimmed.
        if action in ("previous_merge", "to_start"):
            return self.k > 0 or None
        if action in ("next_merge", "to_end"):
            return self.k < self.walk.total or None
        if action in ("edit_text", "leave_text"):
            editing = self.focused is not None and self.focused.id == "text"
            return editing == (action == "leave_text")
        # `q` goes back when this view was opened over another screen, and quits otherwise.
        if action in ("back", "quit_app"):
            return over_another(self) == (action == "back")
        return True

    @on(TextArea.Changed, "#text")
    def _text_edited(self, event: TextArea.Changed) -> None:
        self.walk = EncodeWalk(self.tokenizer, event.text_area.text)
        self.k = self.walk.total
        self.note = ""
        self.show_step()
