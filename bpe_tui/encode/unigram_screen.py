"""The encode view of a Unigram model: step through each word's lattice and the Viterbi best
path through it, one position at a time.

The walk (``LatticeWalk``) lays every word's positions end to end, each word ending with its
path read back; ``n`` fills the next position, ``w`` goes to the end of the word. The view
opens before any position is filled; editing the text encodes it again at once and shows
the final tokens.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Static, TextArea

from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.common.tokens import token_text
from bpe_tui.encode.lattice import LatticeModel, LatticeWalk, step_spans
from bpe_tui.encode.stepping import SteppedEncodeScreen
from bpe_tui.encode.widgets.best_scores import BestScores
from bpe_tui.encode.widgets.lattice_pieces import LatticePieces
from bpe_tui.encode.widgets.text_words import TextWords
from engine.compare.baselines import SpanTokenizer
from engine.compare.comparison import model_row
from engine.encode.sentencepiece_steps import SentencePieceLattices

SAMPLE_TEXT = "Tokenization of unaffable words: 孙悟空 and naïve."
"""Shown when the view is opened without a text: a long word, a rare one, Chinese and an
accent, with punctuation that sticks to its word (Unigram cuts words at spaces only)."""


def pieces_text(pieces: list[str]) -> Text:
    """Pieces separated by ``|``."""
    return Text("|", style="dim").join(token_text(piece.encode(), "bold") for piece in pieces)


class UnigramEncodeScreen(SteppedEncodeScreen[LatticeWalk]):
    """Encode a text with a Unigram ``tokenizer`` and walk through every word's lattice."""

    CSS_PATH = ["unigram_screen.tcss", "../common/tokens.tcss"]

    BINDINGS = [
        Binding("n", "next_position", "Next", tooltip="Fill the next position: its best score and back-pointer", id="encode.next"),
        Binding("p,b", "previous_position", "Undo", tooltip="Back one position", id="encode.previous"),
        Binding("w", "next_word", "Word", tooltip="To the end of the word: its path read back", id="encode.word"),
        Binding("e,f", "to_end", "End", tooltip="Jump to the final tokens", id="encode.end"),
        Binding("home,0", "to_start", "Start", tooltip="Back to the start, before any position", id="encode.start"),
        Binding("slash", "edit_text", "Edit", tooltip="Edit the text (encodes again as you type)", id="encode.edit"),
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
        title="the encode view: Unigram",
        intro=(
            "Encoding a text with a Unigram model, as SentencePiece and Hugging Face do. The model "
            "is a probability (概率) for every piece; a segmentation's probability is the product "
            "of its pieces', so its log-probability the sum of their log p. The encoder takes, for "
            "each word, the most probable of all its segmentations: global (全局最优), where BPE "
            "replays its merges and WordPiece takes the longest piece first, greedily (贪心). "
            "Added tokens (<unk> written in the text) are cut out first, whole. Runs of spaces "
            "become one; each space becomes ▁, a ▁ goes before the text, and the text is cut "
            "before each ▁: the words. Punctuation stays on its word (Unigram cuts at spaces only). "
            "A word has more segmentations than can be listed, but the best is found in one pass, "
            "left to right (the Viterbi algorithm): the best way to read the first j characters "
            "ends with some piece, and before that piece comes the best way to read up to where it "
            "starts. step K/TOTAL counts positions, and each word's path, over the whole text. A "
            "SentencePiece Unigram model (.model) reads the text through its own normalizer first "
            "(NFKC unless it was trained without); its user-defined symbols score just below 0, so "
            "the path always takes them, and with byte_fallback an unknown character becomes its "
            "UTF-8 bytes (<0xE5>...) instead of <unk>."
        ),
        panels=(
            (
                "text (the words as Unigram reads them)",
                "The text's words, each with ▁ where the space before it was: the words whose path is "
                "chosen, the word being read (up to the position reached, then the rest), the words "
                "still ahead, added tokens in gold. / edits the text: it encodes again as you type "
                "and shows the final tokens; esc goes back to stepping.",
            ),
            (
                "step K/TOTAL (the line below the text)",
                "What the last step did: the position filled, its best score and the piece it came "
                "by, or the word's path read back with its log-probability.",
            ),
            (
                "tokens and ids",
                "The tokens made so far, each id underneath: the words before, and the pieces of the "
                "word being read (green) once its path is chosen. At the end they are the model's "
                "encode of the text. An unknown character (no piece holds it) scores 10 below the "
                "least probable piece, and unknown characters next to each other are one <unk>.",
            ),
            (
                LatticePieces.BORDER_TITLE,
                "The word's lattice: every piece of the vocabulary that fits somewhere in the word, "
                "with the characters it covers (start–end, end excluded) and its log p, in the order "
                "the Viterbi tries them: by where they end, then where they start. The pieces ending "
                "at the position just filled are lit, each with its total: the best score where it "
                "starts plus its log p; the highest is the best (◀ best; on a tie, the first tried: "
                "the longest piece). Pieces ending further on are dimmed. Once the path is read back "
                "its pieces are marked ★.",
            ),
            (
                BestScores.BORDER_TITLE,
                "One row a position of the word: the character read last, the best score of the "
                "characters before that position (0 at the start: nothing read, log 1), and the "
                "back-pointer, the last piece of that best way and where it starts. At the word's "
                "end, the path is read back from the last position, each back-pointer leading to the "
                "position its piece starts at; its pieces, in order, and their log p add up to the "
                "word's score.",
            ),
        ),
        token_marks=False,
    )
    """What ``?`` says of this screen (``bpe-tui explain encode --algorithm unigram``)."""

    def __init__(self, tokenizer: LatticeModel, text: str | None = None) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.walk = self.new_walk(SAMPLE_TEXT if text is None else text)
        self.at = 0
        """Moves made so far."""

    def compose(self) -> ComposeResult:
        yield TextWords(id="words")
        text = TextArea(self.walk.text, soft_wrap=True, id="text")
        text.border_title = "text  (esc to leave)"
        yield text
        yield Static(id="status")
        spans = TokenSpans(id="tokens")
        spans.border_title = "tokens and ids"
        yield spans
        with Horizontal(id="details"):
            yield LatticePieces(id="lattice")
            yield BestScores(id="best")
        yield Footer(compact=True)

    # -- showing a step --------------------------------------------------------------------

    def new_walk(self, text: str) -> LatticeWalk:
        return LatticeWalk(self.tokenizer, text)

    def last(self) -> int:
        return self.walk.total

    def spans(self) -> SpanTokenizer:
        model = self.tokenizer.model if isinstance(self.tokenizer, SentencePieceLattices) else self.tokenizer
        return model_row(model, "this tokenizer")

    def show_details(self) -> None:
        walk, at = self.walk, self.at
        words = self.query_one(TextWords)
        words.show(walk, at)
        words.border_title = self.text_title("text as Unigram reads it (▁ = space)", "")
        tokens = self.query_one(TokenSpans)
        spans, first = step_spans(walk, at, tokens.styles_for_spans())
        tokens.show(spans, first)
        self.scroll_tokens_to(first)
        focus = walk.focus(at)
        self.query_one(LatticePieces).show(focus)
        self.query_one(BestScores).show(focus)

    def status(self) -> Text:
        walk, at = self.walk, self.at
        head = f"step {min(at, walk.total)}/{walk.total}"
        focus = walk.focus(at)
        if focus is None:
            return Text(f"{head} · no word to read")
        word = focus.lattice.word
        if focus.reached == 0:
            return Text.assemble(f"{head} · n fills the positions of “", (word, "underline"), "”, left to right")
        if focus.done:
            lattice = focus.lattice
            pieces = [lattice.nodes[k].piece for k in lattice.best]
            status = Text.assemble(f"{head} · “{word}”: path ", pieces_text(pieces), f", log p {lattice.score:.2f}")
            if len(lattice.ids) < len(pieces):
                status.append(f" · unknown characters next to each other: one {self.tokenizer.token(self.tokenizer.unk_id)}")
            if at >= walk.total:
                status.append(f" · done: {len(walk.ids):,} tokens from {walk.words:,} word{'s' * (walk.words != 1)}")
            return status
        j = focus.reached
        node = focus.lattice.nodes[focus.viterbi.back[j]]
        tried = len(focus.viterbi.ending[j])
        return Text.assemble(
            f"{head} · “{word}” position {j}/{len(word)}: best {focus.viterbi.best[j]:.2f} by ",
            token_text(node.piece.encode(), "bold"),
            f" from {node.start} ({tried} tried)",
        )

    # -- actions -----------------------------------------------------------------------------

    def action_next_position(self) -> None:
        self.go(self.at + 1)

    def action_previous_position(self) -> None:
        self.go(self.at - 1)

    def action_next_word(self) -> None:
        self.go(self.walk.next_word(self.at))
