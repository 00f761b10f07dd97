"""Unigram's trainer in a process of its own: it reads the corpus, then obeys the screen.

A round takes 0.1 to 1 s on a real corpus, most of it in the compiled core but the rest in
Python (the pieces removed, the tokenizer for the chosen word): in a thread it would hold
the interpreter lock against the interface. Here it runs on another core, and between two
rounds it reads the commands the screen sent, in order (three quick ``n`` are three rounds).

Commands are ``(seq, name, arg)``: ``("by", n)`` rounds from where the last motion was
heading (``-1``: back one), ``("to", k)`` (``None``: to the end), ``("play", None)`` (a round
every ``PLAY_PAUSE`` seconds), ``("pause", None)``, ``("word", text)`` (the word whose
segmentations are shown), ``("save", directory)``, ``("files", None)`` (the files a save
writes, sent back for a browser to download), ``("tokenizer", None)`` and ``("quit", None)``.
Reports are tuples named by their first item: ``reading``, ``seeding``, ``sampled``,
``idle``, ``notice``, ``not saved`` (a save that failed: its directory and why), ``files``,
``tokenizer``, ``failed`` (bad input) and ``crashed`` (a bug: the traceback).

Rounds are deterministic: going back builds the trainer again and replays (``goto``), and
the rounds' records, kept as they were first made, stay true.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection

from bpe_tui.train.saving import save_report
from bpe_tui.train.unigram.snapshot import OPENING, RoundView, Segmentations, default_word, sample, segmentations
from engine import BpeError
from engine.encode.unigram import UnigramTokenizer
from engine.train.settings import Inputs, TrainOptions
from engine.train.unigram.trainer import UnigramTrainer

PLAY_PAUSE = 1.0
"""Seconds between two rounds when playing: time to read what one did."""
IDLE_POLL = 0.5
"""How long an idle trainer waits for a command before looking again."""
END = 1 << 30
"""A round past any training's last: ``to`` the end."""


@dataclass
class Motion:
    """Where the trainer is heading: round ``target``; a play goes on a round at a time."""

    target: int
    seq: int
    playing: bool = False
    next_at: float = 0.0
    """When a play takes its next round."""


def serve(commands: Connection, reports: Connection, inputs: Inputs, options: TrainOptions) -> None:
    """The process's main: read the corpus and seed, then obey until told to quit or the
    screen goes away."""
    try:
        _Server(commands, reports, options).run(inputs)
    except (BrokenPipeError, EOFError):
        pass  # the screen has gone: nothing left to report to
    except BaseException:
        reports.send(("crashed", traceback.format_exc()))


class _Server:
    def __init__(self, commands: Connection, reports: Connection, options: TrainOptions) -> None:
        self.commands, self.reports, self.options = commands, reports, options
        self.rounds: list[RoundView] = []
        """Every round made so far, by number − 1: still true after going back."""
        self.seeded = 0
        self.word = ""
        self._tokenizer: tuple[int, UnigramTokenizer] | None = None
        """The model at a round, made when first needed."""

    def run(self, inputs: Inputs) -> None:
        def progress(phase: str, done: int, total: int | None) -> None:
            if phase == "read":
                self.reports.send(("reading", done, total))
                if total is not None and done >= total:
                    self.reports.send(("seeding",))

        try:
            trainer = self.options.load_unigram(inputs, progress)
        except BpeError as e:
            self.reports.send(("failed", e))
            return
        trainer.progress = None
        self.seeded = trainer.size
        self.word = default_word(trainer, self.opening(inputs))
        self.send_sample(trainer)
        motion: Motion | None = None
        while True:
            wait = IDLE_POLL if motion is None else max(0.0, motion.next_at - time.monotonic())
            if self.commands.poll(wait):
                while True:  # obey everything sent so far before the next round
                    seq, name, arg = self.commands.recv()
                    if name == "quit":
                        return
                    motion = self.obey(trainer, motion, seq, name, arg)
                    if not self.commands.poll(0):
                        break
            if motion is not None and self.move(trainer, motion):
                self.reports.send(("idle", motion.seq))
                motion = None

    def obey(self, trainer: UnigramTrainer, motion: Motion | None, seq: int, name: str, arg: object) -> Motion | None:
        """The motion after command ``name``; the word, saving and the tokenizer happen here."""
        base = trainer.rounds_done if motion is None or motion.playing else motion.target
        if name == "by":
            assert isinstance(arg, int)  # rounds to go: 1, or -1 for one back
            return Motion(max(0, base + arg), seq)
        if name == "to":
            assert arg is None or isinstance(arg, int)  # the round to go to (None: the end)
            return Motion(END if arg is None else max(0, arg), seq)
        if name == "play":
            return Motion(END, seq, playing=True)
        if name == "pause":
            return None
        if name == "word":
            self.word = str(arg)
            self.send_sample(trainer)
        elif name == "save":
            self.reports.send(save_report(self.options, trainer, str(arg), f"round {trainer.rounds_done:,}"))
        elif name == "files":
            self.reports.send(("files", trainer.rounds_done, self.options.files(trainer)))
        elif name == "tokenizer":
            self.reports.send(("tokenizer", self.tokenizer(trainer)))
        return motion

    def move(self, trainer: UnigramTrainer, motion: Motion) -> bool:
        """One round of ``motion`` (or the way back to its target); True once it has arrived."""
        if motion.target < trainer.rounds_done:
            trainer.goto(motion.target)  # build again and replay: the rounds are deterministic
        elif not trainer.finished and trainer.rounds_done < motion.target:
            event = trainer.step()
            assert event is not None  # not finished
            del self.rounds[event.number - 1 :]
            self.rounds.append(RoundView.of(event))
            motion.next_at = time.monotonic() + PLAY_PAUSE if motion.playing else 0.0
        self.send_sample(trainer)
        return trainer.finished or trainer.rounds_done == motion.target

    def opening(self, inputs: Inputs) -> str | None:
        """The start of the corpus (None when it cannot be read again)."""
        try:
            return self.options.opening_text(inputs, OPENING)
        except BpeError:
            return None

    def tokenizer(self, trainer: UnigramTrainer) -> UnigramTokenizer:
        """The model as trained so far (made once a round)."""
        if self._tokenizer is None or self._tokenizer[0] != trainer.rounds_done:
            self._tokenizer = trainer.rounds_done, UnigramTokenizer.from_trainer(trainer)
        return self._tokenizer[1]

    def chosen(self, trainer: UnigramTrainer) -> Segmentations:
        return segmentations(self.tokenizer(trainer), self.word)

    def send_sample(self, trainer: UnigramTrainer) -> None:
        self.reports.send(("sampled", sample(trainer, self.seeded, self.rounds, self.chosen(trainer))))
