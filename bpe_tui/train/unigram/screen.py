"""Unigram's training screen: watch a vocabulary shrink, one round of EM and pruning at a time.

Where BPE and WordPiece start from characters and merge, Unigram starts big (the characters
and the frequent substrings of the corpus) and prunes. The panels read only
``UnigramSnapshot``: the rounds' likelihood and vocabulary, what the last round pruned, what
its EM changed, and a word's best segmentations on the model as it is.

The trainer runs in a process of its own (``unigram.process``), so the interface never waits
for a round. Keys become commands sent to that process; a reader thread turns its reports
into messages, a burst of snapshots collapsing to the newest.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Label, ProgressBar
from textual.worker import get_current_worker

from bpe_tui.common.child_process import ChildProcess, Report, ensure_running, listen
from bpe_tui.common.downloads import download
from bpe_tui.common.navigation import Ask, Confirm, Deliver, Failed, OpenEncode, over_another
from bpe_tui.common.screen_help import ScreenHelp
from bpe_tui.train.unigram.process import serve
from bpe_tui.train.unigram.snapshot import UnigramSnapshot
from bpe_tui.train.unigram.widgets.likelihood_rounds import LikelihoodRounds
from bpe_tui.train.unigram.widgets.pruned_pieces import PrunedPieces
from bpe_tui.train.unigram.widgets.round_status import RoundStatus
from bpe_tui.train.unigram.widgets.score_changes import ScoreChanges
from bpe_tui.train.unigram.widgets.word_segmentations import WordSegmentations
from engine import BpeError
from engine.encode.unigram import UnigramTokenizer
from engine.train.settings import Inputs, TrainOptions

WAITING_KEYS = {"step": "n", "back": "b", "goto": "g", "fast_forward": "f", "play": "␣"}
"""Keys that step or move: pressed while the corpus is read, they wait and act once it is."""
TRAINER_PROCESS = "bpe-tui unigram trainer"
"""The name of the trainer's process among ``multiprocessing.active_children()``."""


class UnigramTrainScreen(Screen[None]):
    """Every panel answers one question about the round that just happened."""

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

    class Sampled(Message):
        """The trainer's state after a round (or after going back)."""

        def __init__(self, snapshot: UnigramSnapshot) -> None:
            super().__init__()
            self.snapshot = snapshot

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, UnigramTrainScreen.Sampled)

    class Reading(Message):
        """Reading progress in bytes (total None: unknown); ``done`` None: read, now seeding."""

        def __init__(self, done: int | None, total: int | None) -> None:
            super().__init__()
            self.done, self.total = done, total

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, UnigramTrainScreen.Reading)

    class Idle(Message):
        """The trainer reached the target of command ``seq``, or training is over."""

        def __init__(self, seq: int) -> None:
            super().__init__()
            self.seq = seq

    def __init__(self, inputs: Inputs | Path, options: TrainOptions, out: str | None = None, label: str | None = None) -> None:
        super().__init__()
        self.inputs = [str(inputs)] if isinstance(inputs, (str, Path)) else [str(i) for i in inputs]
        self.label = label or Path(self.inputs[0]).name
        self.out = out
        self._options = options
        self._written: set[Path] = set()
        """Directories this screen saved into: saving there again replaces its own files unasked."""
        self._waiting: list[str] = []
        """Keys that step or move, pressed while the corpus is read: their actions, in order."""
        ensure_running()  # the trainer's process comes from a fork server, started before the app captures stderr
        self.snapshot: UnigramSnapshot | None = None
        """The newest state the trainer's process sent."""
        self._trainer: ChildProcess | None = None
        self._seq = 0
        self.playing = False
        self._quitting = False
        self._loading = "reading the corpus"
        """What the process is doing before the first round can run."""
        self._views: deque[Callable[[UnigramTokenizer], None]] = deque()
        """What opens on each tokenizer asked of the trainer (``e``), in the order asked."""

    @property
    def options(self) -> TrainOptions:
        return self._options

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

    @work(thread=True, exclusive=True, group="trainer")
    def _run_trainer(self) -> None:
        """Start the trainer's process and pass its reports on as messages until it ends."""
        trainer = self._trainer = ChildProcess(serve, (self.inputs, self._options), TRAINER_PROCESS)
        worker = get_current_worker()
        try:
            for report in listen([trainer], lambda: worker.is_cancelled):
                if report is not None:
                    self._report(report[1])
        finally:
            trainer.close(terminate=worker.is_cancelled)  # the app is closing: end a round under way
        if self._quitting:
            self.app.call_from_thread(self._leave)
        elif (how := trainer.death()) and not worker.is_cancelled:
            self.post_message(Failed(BpeError(f"{self.label}: the training process died ({how}: out of memory, or killed)")))

    def _report(self, report: Report) -> None:
        kind, *rest = report
        if kind == "reading":
            self.post_message(self.Reading(*rest))
        elif kind == "seeding":
            self.post_message(self.Reading(None, None))
        elif kind == "sampled":
            self.post_message(self.Sampled(*rest))
        elif kind == "idle":
            self.post_message(self.Idle(*rest))
        elif kind == "notice":
            text, severity = rest
            self.app.call_from_thread(self.notify, text, severity=severity)
        elif kind == "files":
            self.app.call_from_thread(self._download, *rest)
        elif kind == "tokenizer":
            self.app.call_from_thread(self._views.popleft(), *rest)
        elif kind == "failed":
            self.post_message(Failed(*rest))
        else:  # "crashed"
            self.app.call_from_thread(self.app.panic, f"the trainer failed:\n{rest[0]}")

    # -- what the thread reports ----------------------------------------------------------

    def on_unigram_train_screen_reading(self, message: Reading) -> None:
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

    def on_unigram_train_screen_sampled(self, message: Sampled) -> None:
        snapshot = self.snapshot = message.snapshot
        if self.has_class("-loading"):
            self.remove_class("-loading")
            self._show_activity()
            waiting, self._waiting = self._waiting, []
            for action in waiting:  # the keys pressed while it loaded, in order
                getattr(self, f"action_{action}")()
        for panel in self.query("#panels > .row > *").results():
            panel.show(snapshot)  # type: ignore[attr-defined]
        status = self.query_one(RoundStatus)
        status.rounds_done = snapshot.rounds_done
        status.pieces = snapshot.size
        status.detail = self._detail()

    def on_unigram_train_screen_idle(self, message: Idle) -> None:
        if message.seq == self._seq:  # not an older motion that a newer key replaced
            self.playing = False
            self._show_activity()

    # -- keys ------------------------------------------------------------------------------

    def _send(self, command: str, arg: object = None, activity: str | None = None) -> bool:
        """Send a command to the trainer (refused while the corpus is read)."""
        if self.snapshot is None:
            self.notify("still reading the corpus")
            return False
        assert self._trainer is not None
        self._seq += 1
        self._trainer.send((self._seq, command, arg))
        if activity is not None:
            self.query_one(RoundStatus).activity = activity
        return True

    def _ready(self, action: str) -> bool:
        """Whether the trainer is ready; if not, ``action`` waits for it."""
        if self.snapshot is not None:
            return True
        self._waiting.append(action)
        self._show_activity()
        return False

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

    def _pause(self) -> None:
        self.playing = False
        self._send("pause")
        self._show_activity()

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
            self.post_message(Ask(f"Go to round (0 to {self.snapshot.rounds_done:,}{ahead}):", chosen, placeholder="k", integer=True))

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
        self.post_message(Ask(question, chosen, now.lstrip("▁"), placeholder="tokenization, 孙悟空, your name…"))

    def action_save(self) -> None:
        if self.app.is_web:  # served: the files go to the browser, never onto the server's disk
            self._send("files")
        elif self.out is not None:
            self._save_to(self.out)
        elif self.snapshot is not None:
            self.post_message(Ask(f"Save {self._options.saves} to directory:", self._save_to, "out"))

    def _save_to(self, directory: str | None) -> None:
        """Save into ``directory``, first asking before replacing files this screen did not write."""
        if directory is None:
            return
        present = [name for name in self._options.file_names if (Path(directory) / name).exists()]
        if present and Path(directory).resolve() not in self._written:
            them = "it" if len(present) == 1 else "them"
            question = f"{directory} already holds {', '.join(present)}. Replace {them}?"
            self.post_message(Confirm(question, lambda yes: self._save(directory) if yes else None, "Replace", "Keep"))
        else:
            self._save(directory)

    def _save(self, directory: str) -> None:
        if self._send("save", directory):
            self.out = directory
            self._written.add(Path(directory).resolve())

    def _download(self, rounds_done: int, files: dict[str, str]) -> None:
        name = download(self.app, f"unigram-tokenizer-round-{rounds_done}", files)
        self.notify(f"round {rounds_done:,}: your browser downloads {name}")

    def action_encode(self) -> None:
        """Pause, ask the trainer for the model as it is now, and open the encode view on it."""
        if self.playing:
            self._pause()
        self._views.append(self._push_encode)  # before asking: the answer comes from another thread
        if not self._send("tokenizer"):
            self._views.pop()

    def _push_encode(self, tokenizer: UnigramTokenizer) -> None:
        self.post_message(OpenEncode(tokenizer, self._opening_text()))

    def _opening_text(self) -> str | None:
        """The start of the corpus: something to encode (None: the encode view's own sample)."""
        try:
            return self._options.opening_text(self.inputs, chars=120)
        except BpeError:  # unreadable since it was read
            return None

    def action_screenshot(self) -> None:
        """A picture of the screen as it is now, taken before the file name is asked."""
        done = 0 if self.snapshot is None else self.snapshot.rounds_done
        svg = self.app.export_screenshot(title=f"bpe-tui · {self.label} · Unigram round {done:,}")

        def chosen(answer: str | None) -> None:
            if answer:
                self.post_message(Deliver(answer, svg, "picture of the screen"))

        self.post_message(Ask("Save a picture of the screen (SVG) to:", chosen, f"bpe-tui-unigram-round-{done}.svg"))

    def action_quit(self) -> None:
        if self.snapshot is None:  # still reading: nothing to save, and the reading is stopped
            self._leave()
        elif not self._quitting:  # a save sent before is written before the trainer quits
            self._quitting = True
            self._send("quit", activity="quitting…")

    def _leave(self) -> None:
        """Back to the screen below when opened over another (its trainer process ends with
        this screen's worker), else quit."""
        if over_another(self):
            self.app.pop_screen()
        else:
            self.app.exit(0)

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
