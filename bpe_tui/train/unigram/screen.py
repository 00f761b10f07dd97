"""Unigram's training screen: watch a vocabulary shrink, one round of EM and pruning at a time.

Where BPE and WordPiece start from characters and merge, Unigram starts big (the characters
and the frequent substrings of the corpus) and prunes. The panels read only
``UnigramSnapshot``: the rounds' likelihood and vocabulary, what the last round pruned, what
its EM changed, and a word's best segmentations on the model as it is.

The trainer runs in a process of its own (``unigram.process``), so the interface never waits
for a round; ``TrainerScreen`` (``train.trainer_screen``) drives it, as it drives BPE's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Label, ProgressBar

from bpe_tui.common.child_process import ChildProcess
from bpe_tui.common.navigation import Ask, OpenEncode, ask
from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.train.trainer_screen import TrainerScreen
from bpe_tui.train.unigram.process import serve
from bpe_tui.train.unigram.snapshot import UnigramSnapshot
from bpe_tui.train.unigram.widgets.likelihood_rounds import LikelihoodRounds
from bpe_tui.train.unigram.widgets.pruned_pieces import PrunedPieces
from bpe_tui.train.unigram.widgets.round_status import RoundStatus
from bpe_tui.train.unigram.widgets.score_changes import ScoreChanges
from bpe_tui.train.unigram.widgets.word_segmentations import WordSegmentations
from engine.encode.unigram import UnigramTokenizer
from engine.train.settings import Inputs, TrainOptions

WAITING_KEYS = {"step": "n", "back": "b", "goto": "g", "fast_forward": "f", "play": "␣"}
"""Keys that step or move: pressed while the corpus is read, they wait and act once it is."""
TRAINER_PROCESS = "bpe-tui unigram trainer"
"""The name of the trainer's process among ``multiprocessing.active_children()``."""


class UnigramTrainScreen(TrainerScreen[UnigramSnapshot]):
    """Every panel answers one question about the round that just happened."""

    UNIT = "round"
    PICTURE = "Unigram round"
    DOWNLOAD = "unigram-tokenizer-round"
    LOADING = "reading the corpus"
    OPENING_CHARS = 120

    CSS_PATH = "screen.tcss"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    BINDINGS = [
        Binding("n", "step", "round", tooltip="Run one round: EM, then pruning", id="unigram.step"),
        Binding("space", "play", "play", key_display="␣", tooltip="Play or pause the rounds, one a second", id="unigram.play"),
        Binding("f", "fast_forward", "end", tooltip="Run the rounds to the end of training", id="unigram.fast_forward"),
        Binding("g", "goto", "go", tooltip="Go to round k, forwards or backwards", id="unigram.goto"),
        Binding("b", "back", "back", tooltip="Back one round (seed again and replay)", id="unigram.back"),
        Binding("w", "word", "word", tooltip="Choose the word whose segmentations are shown", id="unigram.word"),
        Binding("s", "save", "save", tooltip="Save the model as it is now (tokenizer.json)", id="unigram.save"),
        Binding("e", "encode", "encode", tooltip="Encode text with the model as it is now: its lattice", id="unigram.encode"),
        Binding("p", "screenshot", "picture", tooltip="Save a picture of this screen (SVG)", show=False, id="unigram.screenshot"),
        Binding("q", "quit", "quit", tooltip="Quit bpe-tui (back, when opened over another screen)", id="unigram.quit"),
    ]

    SCREEN_HELP = ScreenHelp(
        title="the training screen: Unigram",
        intro=(
            "Unigram language-model training, SentencePiece's default, one round at a time. The "
            "lecture's table sets it beside BPE and WordPiece: a model with a probability (概率) "
            "for every piece, optimized by EM (期望最大化), keeping the probable pieces and dropping "
            "the improbable ones. BPE (频率驱动) and WordPiece (似然驱动) start from characters and "
            "merge, greedily (贪心), one pair at a time, until the vocabulary is big enough. Unigram "
            "goes the other way: it starts big, with every character and the frequent substrings "
            "of the corpus (the seeds), and shrinks. And it is global (全局最优), not greedy: a "
            "word's segmentation is the most probable of all its segmentations, each piece's "
            "probability multiplied (its log-probabilities added), and every word of the corpus "
            "takes part in deciding which pieces stay. Text is taken as SentencePiece takes it: "
            "each space becomes ▁ at the start of the word after it, so ▁the is the at a word's "
            "start; a piece never crosses a word. A round is EM twice, then pruning (剪枝); once "
            "a round leaves at most 1.1 × the vocabulary size, a final step keeps the best scores. "
            "e opens the encode view on the model as it is now: a word's lattice of every piece "
            "that fits, and the best path through it (Viterbi). Keys that step or move (n b g f ␣) "
            "pressed while the corpus is read wait, in order, and act once it is read."
        ),
        panels=(
            (
                "round K (the top line)",
                "Rounds done; the pieces the model has now and the number training stops at (the "
                "vocabulary size less the special tokens: <unk>); what the trainer is doing; the "
                "log-likelihood of the corpus after the last round's EM.",
            ),
            (
                LikelihoodRounds.BORDER_TITLE,
                "One row a round: the corpus log-likelihood after its EM (the log-probability of "
                "every word's segmentations summed over their pieces, times how often the word "
                "occurs), the pieces the round left, and characters per token on the corpus's best "
                "paths. Round 0 is the seeds. The plot draws both: the vocabulary falls fast, by "
                "about a quarter a round; the likelihood falls too, since every piece pruned makes "
                "some words less probable: pruning picks the pieces that cost it least.",
            ),
            (
                PrunedPieces.BORDER_TITLE,
                "The vocabulary before and after the round, and why pieces went: dropped by EM (an "
                "expected count below 0.5), on no best path, split by their own best path (a piece "
                "whose pieces are more probable than itself is never used), or by loss. A piece's "
                "loss is what the corpus log-likelihood would lose without it: each word whose best "
                "path uses it is cut the second-best way instead. Pruning keeps the pieces whose "
                "loss is largest, about 75% of them a round, and every single character whatever "
                "it costs, so that any word can still be segmented. The list shows the removed "
                "pieces that cost the most, the closest calls, with their uses on the best paths.",
            ),
            (
                ScoreChanges.BORDER_TITLE,
                "期望最大化, expectation-maximization. E-step: for every word, every segmentation "
                "is weighted by its probability (forward-backward over the word's lattice), and "
                "each piece gets its expected count, summed over the corpus. M-step: the counts "
                "become the new probabilities (log p = digamma(count) − digamma(total), which "
                "favours frequent pieces a little more than count / total). The log-likelihood "
                "after each E-step rises. The table lists the pieces whose log p moved most: in the "
                "first round, seeds that were counted as words (the) lose to the word starts (▁the) "
                "that really hold them.",
            ),
            (
                WordSegmentations.BORDER_TITLE,
                "A word's most probable segmentations on the model as it is now, best first, each "
                "with its log-probability (its pieces' log p added) and how probable it is against "
                "the best. The best is what the encoder picks; the runners-up are the lecture's "
                "多个切分候选, the candidates sampling draws from. Press w to choose the word (as "
                "typed: a word's start gets its ▁); it stays through the rounds, so you can watch "
                "its segmentation change as pieces are pruned.",
            ),
        ),
        token_marks=False,
    )
    """What ``?`` and ``bpe-tui explain train --algorithm unigram`` say of this screen."""

    def __init__(self, inputs: Inputs | Path, options: TrainOptions, out: str | None = None, label: str | None = None) -> None:
        super().__init__(inputs, options, out, label)
        self._loading = "reading the corpus"
        """What the process is doing before the first round can run."""

    def compose(self) -> ComposeResult:
        yield RoundStatus(id="status")
        with Vertical(id="loading"):
            yield Label(f"Reading {self.label}…", id="loading-label")
            yield ProgressBar(id="loading-bar", show_eta=True)
        with Vertical(id="panels"):
            with Horizontal(classes="row"):
                yield LikelihoodRounds(id="rounds")
                yield PrunedPieces(id="pruned")
            with Horizontal(classes="row", id="lower-row"):
                yield ScoreChanges(id="changes")
                yield WordSegmentations(id="word")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.add_class("-loading")
        status = self.query_one(RoundStatus)
        status.vocab_size = self._options.vocab_size
        status.specials = len(self._options.special_tokens)
        self._show_activity()
        self._run_trainer()

    # -- the trainer's process -----------------------------------------------------------

    def trainer_process(self) -> ChildProcess:
        return ChildProcess(serve, (self.inputs, self._options), TRAINER_PROCESS)

    def status_line(self) -> RoundStatus:
        return self.query_one(RoundStatus)

    def steps_done(self) -> int:
        return 0 if self.snapshot is None else self.snapshot.rounds_done

    def _other_report(self, kind: str, rest: list[Any]) -> None:
        if kind == "seeding":
            self.post_message(self.Reading(None, None))
        else:
            super()._other_report(kind, rest)

    # -- what the thread reports ----------------------------------------------------------

    def on_trainer_screen_reading(self, message: TrainerScreen.Reading) -> None:
        label = self.query_one("#loading-label", Label)
        bar = self.query_one("#loading-bar", ProgressBar)
        if message.done is None:
            bar.update(total=1, progress=1)
            label.update(f"Read {self.label}: seeding the pieces (every character, and the frequent substrings)…")
            self._loading = "seeding"
            self._show_activity()
            return
        bar.update(total=message.total, progress=message.done)
        size = f"{message.done / 1e6:,.1f}" + ("" if message.total is None else f" of {message.total / 1e6:,.1f}")
        label.update(f"Reading the words of {self.label}: {size} MB")

    def on_trainer_screen_sampled(self, message: TrainerScreen.Sampled) -> None:
        snapshot = self._loaded(message)
        for panel in self.query("#panels > .row > *").results():
            panel.show(snapshot)  # type: ignore[attr-defined]
        status = self.query_one(RoundStatus)
        status.rounds_done = snapshot.rounds_done
        status.pieces = snapshot.size
        status.finished = snapshot.finished
        status.detail = self._detail()

    # -- keys ------------------------------------------------------------------------------

    def action_step(self) -> None:
        if self._ready("step"):
            self.playing = False
            self._send("by", 1, "one round: EM, then pruning")

    def action_back(self) -> None:
        if self._ready("back"):
            self.playing = False
            self._send("by", -1, "one round back: seeding again and replaying")

    def action_play(self) -> None:
        if not self._ready("play"):
            return
        if self.playing:
            self._pause()
        else:
            self.playing = self._send("play", None, "▶ playing, a round a second")

    def action_fast_forward(self) -> None:
        if self._ready("fast_forward"):
            self.playing = False
            self._send("to", None, "⏩ to the end of training")

    def action_goto(self) -> None:
        def chosen(answer: str | None) -> None:
            if answer is not None:
                self._send("to", int(answer), f"going to round {int(answer):,}")

        if self._ready("goto"):
            self._pause()
            assert self.snapshot is not None  # ready
            ahead = "" if self.snapshot.finished else ", or more: it stops at the end"
            ask(self, Ask(f"Go to round (0 to {self.snapshot.rounds_done:,}{ahead}):", chosen, placeholder="k", integer=True))

    def action_word(self) -> None:
        """Ask for the word whose segmentations are shown."""

        def chosen(answer: str | None) -> None:
            if not answer:
                return
            words = UnigramTokenizer.words(" ".join(answer.split()))
            if len(words) > 1:
                self.notify(f"one word at a time: showing {words[0]}")
            self._send("word", words[0])

        if self.snapshot is None:
            self.notify("still reading the corpus")
            return
        now = self.snapshot.word.word if self.snapshot.word else ""
        question = "Show the segmentations of the word (a ▁ is put before it, as after a space):"
        ask(self, Ask(question, chosen, now.lstrip("▁"), placeholder="tokenization, 孙悟空, your name…"))

    def action_encode(self) -> None:
        """Pause, ask the trainer for the model as it is now, and open the encode view on it."""
        self._open_on_tokenizer(self._push_encode)

    def _push_encode(self, tokenizer: UnigramTokenizer, text: str | None) -> None:
        self.post_message(OpenEncode(tokenizer, text))

    # -- status ----------------------------------------------------------------------------

    def _show_activity(self) -> None:
        snapshot = self.snapshot
        status = self.query_one(RoundStatus)
        if self.has_class("-loading"):
            keys = " ".join(WAITING_KEYS[action] for action in self._waiting)
            status.activity = f"{self._loading} · waiting: {keys}" if keys else self._loading
        elif snapshot is not None and snapshot.finished:
            status.activity = "■ done"
        elif self.playing:
            status.activity = "▶ playing, a round a second"
        else:
            status.activity = "⏸ paused"
        status.detail = self._detail()

    def _detail(self) -> str:
        last = self.snapshot.last if self.snapshot is not None else None
        likelihood = f"log-likelihood {last.log_likelihood:,.1f} · " if last is not None else ""
        return f"{likelihood}{self.label}"
