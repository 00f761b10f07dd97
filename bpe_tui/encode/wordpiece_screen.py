"""The encode view of a WordPiece model: step through an encode lookup by lookup, the
lecture's 最长匹配 (longest match first, greedy).

The walk (``LongestMatchWalk``) lays every lookup of the encode end to end; ``n`` goes to
the end of the next match (a piece taken, or a word found ``[UNK]``), ``l`` one lookup on.
The view opens before any lookup; editing the text re-encodes it at once and shows the
final tokens.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Static, TextArea

from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.encode.longest_match import LongestMatchWalk, step_spans
from bpe_tui.encode.stepping import SteppedEncodeScreen
from bpe_tui.encode.widgets.lookups import Lookups
from bpe_tui.encode.widgets.match_result import MatchResult
from bpe_tui.encode.widgets.word_spans import WordSpans
from engine.compare.comparison import WordPieceSpans
from engine.encode.wordpiece import WordPieceTokenizer

SAMPLE_TEXT = "[CLS] Unaffable Sherlock Holmes, naïve 日本! [SEP]"
"""Shown when the view is opened without a text: the BERT paper's unaffable, a name, an
accent and characters a small vocabulary lacks, between added tokens."""


class WordPieceEncodeScreen(SteppedEncodeScreen[LongestMatchWalk]):
    """Encode a text with a WordPiece ``tokenizer`` and walk through every lookup."""

    CSS_PATH = ["wordpiece_screen.tcss", "../common/tokens.tcss"]

    BINDINGS = [
        Binding("n", "next_match", "Next", tooltip="Look up candidates, longest first, until one is found", id="encode.next"),
        Binding("l", "next_lookup", "Lookup", tooltip="Look up one candidate", id="encode.lookup"),
        Binding("p,b", "previous_match", "Undo", tooltip="Back to the end of the match before", id="encode.previous"),
        Binding("e,f", "to_end", "End", tooltip="Jump to the final tokens", id="encode.end"),
        Binding("home,0", "to_start", "Start", tooltip="Back to the start, before any lookup", id="encode.start"),
        Binding("slash", "edit_text", "Edit", tooltip="Edit the text (re-encodes as you type)", id="encode.edit"),
        Binding("escape", "leave_text", "Stepping", tooltip="Back to stepping", id="encode.leave"),
        Binding(
            "c",
            "compare",
            "Compare",
            tooltip="Compare this text across character, byte, word and BPE tokenizers",
            show=False,  # the footer fits 80 columns; ? and the palette list it
            id="encode.compare",
        ),
        Binding("q", "back", "Back", tooltip="Back to the training screen, when opened from it", id="encode.back"),
        Binding("q", "quit_app", "Quit", tooltip="Quit bpe-tui, when opened on its own", id="encode.quit"),
    ]

    SCREEN_HELP = ScreenHelp(
        title="the encode view: WordPiece",
        intro=(
            "Encoding a text with a WordPiece vocabulary, as BERT does: 最长匹配, the longest match "
            "first, greedily (贪心). Added tokens ([CLS], [SEP], ...) are cut out of the text "
            "first, whole. The rest is lowercased if the model asks and cut into words (at "
            "whitespace, each punctuation mark alone). Each word is covered from the left: look up "
            "the whole word in the vocabulary, then one character shorter, and so on; the first "
            "candidate found is taken. From where it ends the search starts again on ## + the "
            "rest: ## marks a piece that continues a word, so un at a word's start and ##un inside "
            "one are two different tokens (unaffable: un ##aff ##able). A rest that no piece "
            "starts, not even its first character, makes the whole word one [UNK] (the pieces "
            "taken before it are dropped); so does a word longer than the model's limit "
            "(max_input_chars_per_word, 100 in BERT). step K/TOTAL counts matches (a piece "
            "taken, or a word found [UNK]) over the whole text; n goes to the next one, l one "
            "lookup at a time."
        ),
        panels=(
            (
                "why not BPE's way",
                "BPE encodes by replaying its merges in the order training learned them: from bytes "
                "up, the pair with the lowest merge rank first. A WordPiece vocabulary keeps no "
                "merge order, only its pieces, so its encoder takes the longest piece it finds, left "
                "to right. Greedy is not merge replay: on a BPE vocabulary, longest match (the "
                "lecture's bpe_tokenize_fast) can cut a word otherwise than BPE's encoder, since the "
                "longest piece at the left need not be one the merges build there. And a long piece "
                "taken early can leave a rest that splits into many pieces, or that no piece starts "
                "([UNK]), where a shorter first piece would have done.",
            ),
            (
                "text",
                "The text, each word's span in its own colour: the words already covered, the word "
                "being matched (its pieces taken so far green, the rest underlined), the words "
                "still ahead, added tokens in gold and [UNK] words in red. / edits it: it "
                "re-encodes as you type and shows the final tokens; esc goes back to stepping.",
            ),
            (
                "step K/TOTAL (the line below the text)",
                "What the last step did: the piece taken and where the next search starts, or why the word is [UNK].",
            ),
            (
                "tokens and ids",
                "The tokens made so far, each id underneath: the words before, the pieces of the "
                "word being matched (underlined, the newest green), added tokens and [UNK] in gold. "
                "At the end they are the model's encode of the text.",
            ),
            (
                "longest match",
                "Where the search is (the start of the word, or ## + the rest after the pieces "
                "taken), then every candidate looked up there, longest first: ✗ not in the "
                "vocabulary, ✓ found (taken). Candidates longer than the vocabulary's longest entry "
                "are not looked up. For an [UNK] word, why: the rest that no piece starts, or the "
                "word's length.",
            ),
            (
                "result",
                "Tokens and [UNK] words so far and at the end, the characters read and characters "
                "per token, the lookups made, and the ids so far.",
            ),
        ),
        token_marks=False,
    )
    """What ``?`` says of this screen (``bpe-tui explain encode --algorithm wordpiece``)."""

    def __init__(self, tokenizer: WordPieceTokenizer, text: str | None = None) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.walk = self.new_walk(SAMPLE_TEXT if text is None else text)
        self.at = 0
        """Lookups made so far."""

    def compose(self) -> ComposeResult:
        words = WordSpans(id="words")
        words.border_title = "text  (/ to edit)"
        yield words
        text = TextArea(self.walk.text, soft_wrap=True, id="text")
        text.border_title = "text  (esc to leave)"
        yield text
        yield Static(id="status")
        spans = TokenSpans(id="tokens")
        spans.border_title = "tokens and ids"
        yield spans
        with Horizontal(id="details"):
            yield Lookups(self.tokenizer, id="lookups")
            result = MatchResult(id="result")
            result.border_title = "result"
            yield result
        yield Footer(compact=True)

    # -- showing a step --------------------------------------------------------------------

    def new_walk(self, text: str) -> LongestMatchWalk:
        return LongestMatchWalk(self.tokenizer, text)

    def last(self) -> int:
        return self.walk.lookups

    def spans(self) -> WordPieceSpans:
        return WordPieceSpans(self.tokenizer, "this tokenizer")

    def show_details(self) -> None:
        walk, at = self.walk, self.at
        words = self.query_one(WordSpans)
        words.show(walk, at)
        words.border_title = self.text_title("text", " cut out first")
        tokens = self.query_one(TokenSpans)
        spans, first = step_spans(walk, at, tokens.styles_for_spans())
        tokens.show(spans, first)
        self.scroll_tokens_to(first)
        self.query_one(Lookups).show(walk.focus(at))
        self.query_one(MatchResult).show_step(walk, at)

    def status(self) -> Text:
        walk, at = self.walk, self.at
        head = f"step {walk.moves_done(at)}/{walk.total}"
        focus = walk.focus(at)
        if focus is None:
            return Text(f"{head} · no word to match")
        word = focus.trace.word
        if at >= walk.lookups:
            unknown = walk.unknown_words(at)
            return Text(f"{head} · done: {len(walk.ids)} tokens, {unknown} [UNK]")
        if not focus.finished:
            lookup = "" if not focus.done else f" · lookup {focus.done} of this search"
            return Text.assemble(f"{head}{lookup} · matching “", (word, "underline"), "”")
        match = focus.move.match
        if match is None:
            if len(word) > self.tokenizer.max_input_chars_per_word:
                why = f"longer than {self.tokenizer.max_input_chars_per_word} characters"
            else:
                why = f"no piece starts {self.tokenizer.prefix if focus.move.start else ''}{word[focus.move.start :]}"
            return Text.assemble(f"{head} · “{word}” is {self.tokenizer.unk_token}: {why}")
        after = (
            Text.assemble(" · next search from ", self.tokenizer.prefix + word[match.end :])
            if match.end < len(word)
            else Text(" · the word is done")
        )
        return Text.assemble(f"{head} · took ", (match.token, "bold"), f" (id {match.id}) in “{word}”", after)

    # -- actions -----------------------------------------------------------------------------

    def action_next_match(self) -> None:
        self.go(self.walk.next_stop(self.at))

    def action_next_lookup(self) -> None:
        self.go(self.at + 1)

    def action_previous_match(self) -> None:
        self.go(self.walk.previous_stop(self.at))
