"""The training screen: watch BPE learn, one merge at a time or at full speed.

Byte-level BPE, classic BPE with ``</w>`` (``TrainOptions.classic``) or WordPiece
(``TrainOptions.algorithm``): the panels read only ``TrainSnapshot``, which every trainer
fills. WordPiece's pair table, last merge and heap are its own (``PairScores``,
``ScoredMerge``, ``ScoreHeapStats``), and so is its help (``WORDPIECE_HELP``).

The trainer runs in a process of its own (``train.process``), so the interface never waits
for it; ``TrainerScreen`` (``train.trainer_screen``) drives it. A burst of snapshots
collapses to the newest, so the panels repaint at their own pace however fast the merges
come.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Label, ProgressBar

from bpe_tui.common.child_process import ChildProcess
from bpe_tui.common.navigation import Ask, Deliver, OpenCompare, OpenEncode, ask
from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.train.check_mark import checked_help, status_note
from bpe_tui.train.process import serve
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.trace import check_trace_name, trace_of
from bpe_tui.train.trainer_screen import TrainerScreen
from bpe_tui.train.widgets.corpus_words import CorpusWords
from bpe_tui.train.widgets.followed_words import FollowedWords
from bpe_tui.train.widgets.heap_stats import HeapStats
from bpe_tui.train.widgets.merge_changes import MergeChanges
from bpe_tui.train.widgets.pair_in_corpus import PairInCorpus
from bpe_tui.train.widgets.pair_scores import PairScores
from bpe_tui.train.widgets.pair_table import PairTable
from bpe_tui.train.widgets.score_heap import ScoreHeapStats
from bpe_tui.train.widgets.scored_merge import ScoredMerge
from bpe_tui.train.widgets.status_line import StatusLine
from bpe_tui.train.widgets.vocab_growth import VocabGrowth
from engine import BpeError, Tokenizer
from engine.check.merges import MergeDifference
from engine.compare.comparison import BpeSpans
from engine.encode.wordpiece import WordPieceTokenizer
from engine.train.settings import Inputs, TrainOptions

SPEEDS: tuple[int | None, ...] = (1, 2, 5, 10, 30, 100, 1000, None)
"""Play speeds in merges per second; None: as fast as the trainer goes."""
SPEED = Binding.Group("speed", compact=True)
"""+ and - share one footer entry: with ? the keys still fit in 80 columns."""
WAITING_KEYS = {"step": "n", "back": "b", "goto": "g", "fast_forward": "f", "play": "␣"}
"""Keys that step or move: pressed while the corpus loads, they wait and act once it is read."""
TRAINER_PROCESS = "bpe-tui trainer"
"""The name of the trainer's process among ``multiprocessing.active_children()``."""
BYTE_LEVEL_ONLY = ("encode", "compare", "occurrences", "follow", "raw_bytes")
"""Actions only byte-level BPE has: the encode view, the comparison with this tokenizer,
the pair in the corpus, following words and parts of characters (WordPiece has an encode
view of its own: ``wordpiece_offers``)."""


def wordpiece_offers(action: str) -> bool:
    """Whether the training screen has ``action`` when it trains WordPiece: none of the
    byte-level views but the encode view, which the app opens as WordPiece's."""
    return action == "encode" or action not in BYTE_LEVEL_ONLY


WORDPIECE_HELP = ScreenHelp(
    title="the training screen: WordPiece",
    intro=(
        "WordPiece training (BERT), one merge at a time. The lecture sets it beside BPE: BPE is "
        "frequency-driven (频率驱动) and merges the most frequent adjacent pair; WordPiece is "
        "likelihood-driven (似然驱动) and merges the pair that most raises the likelihood of the "
        "training corpus: the highest score = count(ab) / (count(a) × count(b)). A pair whose "
        "parts are rarely seen apart scores high even when it is rare; a pair of common parts "
        "scores low however frequent it is. On hug×10 pug×5 pun×12 bun×4 hugs×5, BPE merges "
        "##u + ##g first (20 times, score 20/(36×20) = 1/36), WordPiece ##g + ##s (5 times, "
        "5/(20×5) = 1/20). Words are cut as BERT cuts them (at whitespace, each punctuation mark "
        "alone; lowercased first with --lowercase). A word starts as its first character, then "
        "## + each further character: hugs is h ##u ##g ##s. ## marks a piece that continues a "
        "word; a merge keeps the left part's mark: ##g + ##s → ##gs, h + ##u → hu. The "
        "vocabulary starts as the special tokens ([PAD] [UNK] [CLS] [SEP] [MASK]) and every "
        "symbol of the corpus. Each merge visits only the positions of its pair, through the "
        "same token positions, prev/next links and pair_positions as BPE. e opens the encode "
        "view on the vocabulary as it is now: BERT's longest match first, lookup by lookup. The "
        "pair in the corpus (o) and followed words (w) are byte-level BPE's. Keys that step or "
        "move (n b g f ␣) pressed while the corpus is read wait, in order, and act once it is read."
    ),
    panels=(
        (
            "merge K/TOTAL (the top line)",
            "Merges done out of those planned: the vocabulary size minus the special tokens and "
            "the alphabet, known once the corpus is read (a merge that makes a token already in "
            "the vocabulary adds no id, and one more is then planned). Then what the trainer is "
            "doing, characters per token so far and the play speed.",
        ),
        (
            PairScores.BORDER_TITLE,
            "The pairs in the order WordPiece picks them: the highest score "
            "count(ab)/(count(a)·count(b)), every count taken over the corpus as it is segmented "
            "now, each word weighted by how often it occurs. Scores are compared exactly, as "
            "fractions; on a tie (marked =) the larger count(ab) wins, then the greater pair by "
            "UTF-8 bytes. The winner is highlighted. Scores show in three digits: 8.33e-3 is "
            "0.00833. A count the last merge raised is green, one it lowered red. The row BPE is "
            "the pair BPE's rule (the most frequent) would merge now, in the same columns: its "
            "count(ab) is larger, but its parts are common, so count(a)·count(b) is larger still "
            "and its score lower. That is why the two rules differ: likelihood favours pairs "
            "whose parts are rare.",
        ),
        (
            ScoredMerge.BORDER_TITLE,
            "The merge a + b → ab, its id, and its score with the three counts it was chosen on: "
            "score 1/(23·5) is count(ab) 1 over count(a) 23 times count(b) 5. Then the symbol "
            "counts it changed: a and b each lose count(ab) and the new token gains it, so the "
            "score of every pair holding a, b or ab moves too. Then the pair BPE's rule would "
            "have merged instead, with its lower score, the pairs of the same score it beat, and, "
            "as in BPE, the pair counts around each occurrence: prev_token (before a) loses "
            "(prev_token, a) and gains (prev_token, ab); next_token (after b) loses "
            "(b, next_token) and gains (ab, next_token).",
        ),
        (
            HeapStats.BORDER_TITLE,
            "The sizes of the heap (优先队列), pair_counter and pair_positions (append-only: a "
            "stored position is checked when used, never removed). The heap holds scores and is "
            "lazy: a merge changes count(a) and count(b), so the score of every pair holding a, b "
            "or ab moves, most of them up, and each such pair gets a fresh entry (pushed). An old "
            "entry that reaches the top with counts its pair no longer has is a stale pop: it is "
            "dropped, since the pair's fresh entry is on the heap already.",
        ),
        (
            CorpusWords.BORDER_TITLE,
            "The most frequent words, each split into its current tokens, with how often it "
            "occurs. Merges rewrite them as they land: the ## pieces of a word join into longer "
            "ones, t|##h|##e on its way to the.",
        ),
        (
            VocabGrowth.BORDER_TITLE,
            "Characters per token on the whole corpus (whitespace is not kept), which grows as "
            "merges land; count(ab) of every merge (the winning count), which does not fall "
            "steadily as BPE's does, since the score picks, not the count; and the newest tokens "
            "with their id and count(ab).",
        ),
    ),
    token_marks=False,
)
"""What ``?`` says of the training screen when it trains WordPiece (``bpe-tui explain train
--algorithm wordpiece`` prints it)."""


class TrainScreen(TrainerScreen[TrainSnapshot]):
    """Every panel answers one question about the merge that just happened or comes next."""

    UNIT = PICTURE = "merge"
    DOWNLOAD = "bpe-tokenizer-merge"
    LOADING = "pre-tokenizing the corpus"

    CSS_PATH = "screen.tcss"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    BINDINGS = [
        Binding("n", "step", "step", tooltip="Do one merge", id="train.step"),
        Binding("space", "play", "play", key_display="␣", tooltip="Play or pause the merges", id="train.play"),
        Binding("plus,equals_sign", "faster", "faster", key_display="+", tooltip="Play faster", id="train.faster", group=SPEED),
        Binding("minus", "slower", "slower", key_display="-", tooltip="Play slower", id="train.slower", group=SPEED),
        Binding("f", "fast_forward", "end", tooltip="Fast-forward to the last merge", id="train.fast_forward"),
        Binding("g", "goto", "go", tooltip="Go to merge k, forwards or backwards", id="train.goto"),
        Binding("b", "back", "back", tooltip="Undo the last merge (rebuild and replay)", id="train.back"),
        Binding("s", "save", "save", tooltip="Save the tokenizer as it is now", id="train.save"),
        Binding("e", "encode", "encode", tooltip="Encode text with the tokenizer as it is now", id="train.encode"),
        Binding(
            "c",
            "compare",
            "compare",
            tooltip="Compare character, byte, word and this BPE on the corpus's opening",
            show=False,  # the footer is full at 80 columns; the palette and ? list it
            id="train.compare",
        ),
        Binding(
            "o",
            "occurrences",
            "pair",
            tooltip="Show or hide where the next pair lies (pair_positions, prev/next)",
            id="train.occurrences",
        ),
        Binding(
            "w",
            "follow",
            "follow",
            tooltip="Follow a word through training (on a followed word: stop)",
            show=False,
            id="train.follow",
        ),
        Binding(
            "x",
            "raw_bytes",
            "bytes",
            tooltip="Name the characters tokens hold part of, or show raw bytes",
            show=False,
            id="train.raw_bytes",
        ),
        Binding(
            "t",
            "trace",
            "trace",
            tooltip="Export the merges so far, counts and changes (CSV or JSON)",
            show=False,
            id="train.trace",
        ),
        Binding("p", "screenshot", "picture", tooltip="Save a picture of this screen (SVG)", show=False, id="train.screenshot"),
        Binding("q", "quit", "quit", tooltip="Quit bpe-tui (back, when opened over another screen)", id="train.quit"),
    ]

    SCREEN_HELP = ScreenHelp(
        title="the training screen",
        intro=(
            "Byte-level BPE training, one merge at a time, with the lecture's data structures. "
            "Every pre-token (整词) of the corpus is laid out once as token positions (token_idx) "
            "linked by prev/next. Each merge joins the most frequent adjacent pair into a new "
            "token and visits only the positions of that pair, never the whole corpus. Classic BPE "
            "(--classic) uses this screen with strings instead of bytes: each word ends in </w>, "
            "ties go to the pair seen first, and there is no encode view. Keys that step or move "
            "(n b g f ␣) pressed while the corpus is still being pre-tokenized wait, in order, and "
            "act once it is read; the top line lists them."
        ),
        panels=(
            (
                "UTF-8: parts of characters (x)",
                "A Chinese character is three bytes in UTF-8 (an emoji four, é two), and byte-level "
                "BPE learns pieces of characters before whole ones. Inside a word, a token holding "
                "part of a character names it and the bytes it holds: 五₁₋₂|五₃ is 五 cut after its "
                "second byte (\\xe4\\xba|\\x94). On its own (the pair table, the new tokens) a "
                "token shows its bytes and the characters of the corpus it most often begins (→) "
                "or ends (←): \\xe4\\xba →了人二 is the first two bytes of 了, 人 and 二. x "
                "switches to raw bytes only, and back.",
            ),
            (
                "merge K/TOTAL (the top line)",
                "Merges done out of those planned (vocabulary size minus 256 bytes and the special "
                "tokens), what the trainer is doing now, bytes per token so far and the play speed.",
            ),
            (
                PairTable.BORDER_TITLE,
                "The pairs with the highest counts in pair_counter (词对计数器), in the order the "
                "trainer picks them: the highest count, and on a tie the lexicographically greater "
                "pair of byte strings. The winner is highlighted, pairs tied with it are marked =, "
                "and counts the last merge changed show before→after.",
            ),
            (
                MergeChanges.BORDER_TITLE,
                "The merge a + b → ab, its new id and count, and the tied pairs it beat. At each "
                "position of the pair in pair_positions, prev_token (before a) loses the pair "
                "(prev_token, a) and gains (prev_token, ab); next_token (after b) loses (b, next_token) "
                "and gains (ab, next_token). These before→after counts are all a merge changes.",
            ),
            (
                HeapStats.BORDER_TITLE,
                "The sizes of the heap (优先队列), pair_counter and pair_positions, which is "
                "append-only: a stored position is checked when used, never removed. The heap is "
                "lazy: a merge only lowers counts, so old entries stay put and only pairs holding the "
                "new token are pushed. A stale pop is an entry that reaches the top with a count "
                "pair_counter no longer has: it is re-pushed with the true count, or dropped at zero.",
            ),
            (
                CorpusWords.BORDER_TITLE,
                "The most frequent pre-tokens, each split into its current tokens, with how often "
                "it occurs. Merges rewrite them as they land: ␣|t|h|e becomes ␣the in the first "
                "merges, as prev/next links join neighbouring positions into one.",
            ),
            (
                VocabGrowth.BORDER_TITLE,
                "Bytes per token on the whole corpus, which grows as merges land; the winning count "
                "of every merge, which falls as the common pairs are used up; and the newest tokens "
                "with their id and the count they won with.",
            ),
            (
                FollowedWords.BORDER_TITLE,
                "Shown with w (or --follow WORD): words of your choice followed through training. "
                "Each word is cut by the pre-tokenizer (‖ between its pre-tokens, as the encoder "
                "cuts it), then merged with the merges so far: its tokens now, how often the corpus "
                "has it (as a pre-token of its own, and inside longer ones: Chinese text between "
                "two punctuation marks is one pre-token) and the merges that changed it, #12 a+b. "
                "A word the corpus lacks is still cut, as the encoder would. b and g undo and redo "
                "it. w on a followed word stops following it. t exports the merges so far with "
                "their counts, ties and changes (CSV or JSON), p a picture of the screen (SVG): a "
                "handout of the lesson.",
            ),
            (
                PairInCorpus.BORDER_TITLE,
                "Shown with o: where the pair about to merge lives, each word as the trainer holds "
                "it, one cell [position token] per token position, its prev/next links drawn ↔. The "
                "pair's recorded positions in pair_positions are live where the pair still starts "
                "(highlighted) and stale where a merge since changed a token: the merge checks those "
                "and skips them. After a merge, the same words before and after it: the pair's two "
                "cells joined into one, and the prev/next links it rewired marked.",
            ),
        ),
    )
    """What ``?`` and ``bpe-tui explain train`` say of this screen."""

    def __init__(
        self,
        inputs: Inputs | Path,
        options: TrainOptions,
        out: str | None = None,
        label: str | None = None,
        resume: tuple[str, list[tuple[bytes, bytes]]] | None = None,
        follow: Sequence[str] = (),
        check: MergeDifference | None = None,
    ) -> None:
        super().__init__(inputs, options, out, label)
        self._resume = resume
        """A saved run to continue: its directory and merges, redone once the corpus is read."""
        self._follow = list(dict.fromkeys(follow))
        """Words to follow from the start (``--follow``)."""
        self._speed = SPEEDS.index(10)
        self.wordpiece = options.algorithm == "wordpiece"
        """WordPiece: its own pair table, last merge, heap panel and help."""
        if self.wordpiece:
            self.SCREEN_HELP = WORDPIECE_HELP
        self.check = check
        """A student's first differing merge (``bpe-tui check``): the screen opens paused just
        before it, the pairs marked (``bpe_tui.train.check_mark``)."""
        if check is not None:
            self.SCREEN_HELP = checked_help(self.SCREEN_HELP)

    @property
    def merges_planned(self) -> int:
        """Known once the trainer has sent its first snapshot (the keys wait for it)."""
        return 0 if self.snapshot is None else self.snapshot.merges_planned

    def offers(self, action: str) -> bool:
        """Whether this screen has ``action`` at all (its help lists only those): some are
        byte-level only (``BYTE_LEVEL_ONLY``), and WordPiece has an encode view of its own."""
        if self.wordpiece:
            return wordpiece_offers(action)
        return self._options.byte_level or action not in BYTE_LEVEL_ONLY

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.offers(action)

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Vertical(id="loading"):
            yield Label(f"Pre-tokenizing {self.label}…", id="loading-label")
            yield ProgressBar(id="loading-bar", show_eta=True)
        with Vertical(id="panels"):
            with Horizontal(classes="row"):
                yield PairScores(id="pairs") if self.wordpiece else PairTable(id="pairs")
                yield ScoredMerge(id="changes") if self.wordpiece else MergeChanges(id="changes")
            yield ScoreHeapStats(id="heap") if self.wordpiece else HeapStats(id="heap")
            with Horizontal(classes="row", id="corpus-row"):
                yield CorpusWords(id="words")
                yield VocabGrowth(id="vocab")
            yield FollowedWords(id="followed")
            yield PairInCorpus(id="occurrences")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.add_class("-loading")
        self.set_class(self.wordpiece, "-wordpiece")
        status = self.query_one(StatusLine)
        status.merges_planned = self._options.merges_planned
        status.activity = "pre-tokenizing"
        status.detail = self.label
        self.set_class(bool(self._follow), "-following")
        self.query_one(FollowedWords).fit(len(self._follow))
        if self.check is not None and not self.wordpiece:
            status.note = status_note(self.check)
            self.query_one(PairTable).mark = self.check
        self._run_trainer()

    # -- the trainer's process -----------------------------------------------------------

    def trainer_process(self) -> ChildProcess:
        return ChildProcess(serve, (self.inputs, self._options, self._resume, self._follow), TRAINER_PROCESS)

    def status_line(self) -> StatusLine:
        return self.query_one(StatusLine)

    def steps_done(self) -> int:
        return 0 if self.snapshot is None else self.snapshot.merges_done

    def _other_report(self, kind: str, rest: list[Any]) -> None:
        if kind != "trace":
            super()._other_report(kind, rest)
            return
        name, text = rest
        self.post_message(Deliver(name, text, "trace"))
        self.app.call_from_thread(self._show_activity)

    def _push_encode(self, tokenizer: Tokenizer | WordPieceTokenizer, text: str | None) -> None:
        self.post_message(OpenEncode(tokenizer, text))

    def _push_compare(self, tokenizer: Tokenizer | WordPieceTokenizer, text: str | None) -> None:
        assert isinstance(tokenizer, Tokenizer)  # the screen offers the comparison only for byte-level BPE
        self.post_message(OpenCompare(text, BpeSpans(tokenizer, f"this tokenizer ({self.label})")))

    # -- what the thread reports ----------------------------------------------------------

    def on_trainer_screen_reading(self, message: TrainerScreen.Reading) -> None:
        bar = self.query_one("#loading-bar", ProgressBar)
        done = message.done or 0  # always a number: pre-tokenizing is all there is to read
        bar.update(total=message.total, progress=done)
        label = self.query_one("#loading-label", Label)
        if message.total is None:
            label.update(f"Pre-tokenizing {self.label}: {done / 1e6:,.1f} MB so far")
        elif done >= message.total:
            label.update(f"Pre-tokenized {self.label}: laying out the words and counting pairs…")
        else:
            label.update(f"Pre-tokenizing {self.label}: {done / 1e6:,.1f} of {message.total / 1e6:,.1f} MB")

    def on_trainer_screen_sampled(self, message: TrainerScreen.Sampled) -> None:
        snapshot = self._loaded(message)
        self.set_class(bool(snapshot.followed), "-following")
        self._show_panels(snapshot)
        status = self.query_one(StatusLine)
        status.merges_done = snapshot.merges_done
        status.merges_planned = snapshot.merges_planned
        status.detail = self._detail()

    def _show_panels(self, snapshot: TrainSnapshot) -> None:
        for panel in self.query("#panels > .row > *, #heap, #followed, #occurrences").results():
            panel.show(snapshot)  # type: ignore[attr-defined]

    def _first_step(self) -> None:
        if self.check is not None and self.check.index > 1:  # opened by bpe-tui check: just before theirs differs
            self._send("to", self.check.index - 1, f"going to merge {self.check.index - 1:,}")

    # -- keys ------------------------------------------------------------------------------

    def action_step(self) -> None:
        if not self._ready("step"):
            return
        self.playing = False
        self._send("by", 1, "one merge")

    def action_back(self) -> None:
        if not self._ready("back"):
            return
        self.playing = False
        self._send("by", -1, "one back: rebuild and replay")

    def action_play(self) -> None:
        if not self._ready("play"):
            return
        if self.playing:
            self._pause()
        else:
            self._play()

    def _play(self) -> None:
        self.playing = self._send("play", SPEEDS[self._speed], self._play_label())

    def _play_label(self) -> str:
        speed = SPEEDS[self._speed]
        return "▶ playing at full speed" if speed is None else f"▶ playing {speed:,} merges/s"

    def action_faster(self) -> None:
        self._change_speed(+1)

    def action_slower(self) -> None:
        self._change_speed(-1)

    def _change_speed(self, step: int) -> None:
        self._speed = max(0, min(len(SPEEDS) - 1, self._speed + step))
        if self.playing:
            self._play()
        else:
            self.query_one(StatusLine).detail = self._detail()

    def action_fast_forward(self) -> None:
        if not self._ready("fast_forward"):
            return
        self.playing = False
        self._send("to", self.merges_planned, "⏩ fast-forward to the end")

    def action_goto(self) -> None:
        def chosen(answer: str | None) -> None:
            if answer is None:
                return
            asked = int(answer)
            k = max(0, min(asked, self.merges_planned))
            if k != asked:
                self.notify(f"there is no merge {asked:,}: going to the {'last' if asked > k else 'first'}, merge {k:,}")
            self._send("to", k, f"going to merge {k:,}")

        if self._ready("goto"):
            self._pause()
            question = f"Go to merge (0 to {self.merges_planned:,}):"
            ask(self, Ask(question, chosen, placeholder="k", integer=True))

    def action_encode(self) -> None:
        self._open_on_tokenizer(self._push_encode)

    def action_compare(self) -> None:
        self._open_on_tokenizer(self._push_compare)

    def action_occurrences(self) -> None:
        """Show or hide the pair in the corpus; the trainer samples it only while shown."""
        shown = not self.has_class("-occurrences")
        if self._send("watch", shown):
            self.set_class(shown, "-occurrences")

    def action_follow(self) -> None:
        """Ask for a word to follow (or, if followed, to stop following)."""

        def chosen(answer: str | None) -> None:
            if answer:
                self._send("follow", answer)

        if self.snapshot is None:
            self.notify("still pre-tokenizing the corpus")
            return
        followed = ", ".join(word.word for word in self.snapshot.followed)
        question = "Follow the word (a followed word: stop following it):" + (f" now {followed}" if followed else "")
        ask(self, Ask(question, chosen, placeholder="孙悟空, tokenization, your name…"))

    def action_raw_bytes(self) -> None:
        self.app.raw_bytes = not getattr(self.app, "raw_bytes", False)  # type: ignore[attr-defined]
        if self.snapshot is not None:
            self._show_panels(self.snapshot)

    def action_trace(self) -> None:
        """Ask for a file name (.csv or .json), then have the trainer write out its merges."""

        def chosen(answer: str | None) -> None:
            if not answer:
                return
            try:
                check_trace_name(answer, "trace")
            except BpeError as e:
                self.notify(str(e), severity="error")
                return
            self._send("trace", (answer, trace_of(self.label, self._options)), "writing the trace…")

        if self.snapshot is None:
            self.notify("still pre-tokenizing the corpus")
            return
        self._pause()
        question = "Export the merges so far to (.csv or .json):"
        ask(self, Ask(question, chosen, f"merges-{self.snapshot.merges_done}.csv"))

    # -- status ----------------------------------------------------------------------------

    def _show_activity(self) -> None:
        snapshot = self.snapshot
        status = self.query_one(StatusLine)
        if self.has_class("-loading"):
            keys = " ".join(WAITING_KEYS[action] for action in self._waiting)
            status.activity = f"pre-tokenizing · waiting: {keys}" if keys else "pre-tokenizing"
        elif snapshot is not None and snapshot.stopped_early:
            status.activity = "■ stopped early: no pairs left to merge"
        elif snapshot is not None and snapshot.finished:
            status.activity = "■ done"
        elif self.playing:
            status.activity = self._play_label()
        else:
            status.activity = "⏸ paused"
        status.detail = self._detail()

    def _detail(self) -> str:
        speed = SPEEDS[self._speed]
        pace = "full speed" if speed is None else f"{speed:,}/s"
        snapshot = self.snapshot
        ratio = f"{snapshot.per_token:.2f} {snapshot.size_unit}/token · " if snapshot else ""
        return f"{ratio}play {pace} · {self.label}"
