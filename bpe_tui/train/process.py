"""The trainer's own process: it loads the corpus, then obeys the training screen's commands.

Around the compiled merge loop, the trainer runs Python (events, samples, replays). In a
thread it would share the interpreter lock with the interface, and each would slow the
other; in a process of its own it runs at full speed on another core while the screen stays
live. Between slices of merges it reads the commands the screen sent, in order (so three
quick presses of ``n`` are three merges), and it sends back a ``TrainSnapshot`` at most
every ``FRAME`` seconds, and always where a motion stops.

Commands are ``(seq, name, arg)``: ``("by", n)`` merges from where the last step was
heading, ``("to", k)``, ``("play", merges_per_second or None)``, ``("pause", None)``,
``("save", directory)``, ``("files", None)`` (the files a save writes, sent back rather
than written: a served app's browser downloads them), ``("tokenizer", None)``,
``("watch", shown)`` (the pair-in-the-corpus panel was shown or hidden), ``("follow", word)``
(follow it, or stop if followed), ``("trace", (name, TraceOf))`` (the merges so far as a
trace file's text), ``("quit", None)``. Reports are tuples whose first item names them:
``reading``, ``sampled``, ``idle``, ``notice``, ``not saved`` (a save that failed: its
directory and why), ``files``, ``tokenizer``, ``trace``, ``failed`` (bad input) and
``crashed`` (a bug: the traceback).

Once the corpus is read and the first snapshot sent, the process counts its characters
(``CharacterCounts``, about 0.3 s on the 2 MB of zh-xiyouji), so that tokens shown on their
own can name the characters they hold part of; the screen does not wait for it.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection

from bpe_tui.train.saving import save_report
from bpe_tui.train.snapshot import Extras, MergeInCorpus, sample, watched_step
from bpe_tui.train.trace import TraceOf, trace_text
from engine import BpeError, MergeStep, Tokenizer, Trainer
from engine.corpus.characters import CharacterCounts
from engine.corpus.sources import label
from engine.encode.wordpiece import WordPieceTokenizer
from engine.train.follow import Follower
from engine.train.settings import AnyTrainer, Inputs, TrainOptions, replay_saved
from engine.train.trace import replay_records
from engine.train.wordpiece.trainer import WordPieceTrainer

SLICE = 0.04
"""Seconds of merging at full speed between two looks at the commands."""
FRAME = 0.1
"""Shortest time between two snapshots: the panels' frame rate at full speed."""
CHUNK = 16
"""Merges per ``Trainer.run`` call inside a slice: the granularity of the time check."""
IDLE_POLL = 0.5
"""How long an idle trainer waits for a command before checking its parent is alive."""


def tokenizer_of(trainer: AnyTrainer) -> Tokenizer | WordPieceTokenizer:
    """The tokenizer as trained so far, for the encode view (``("tokenizer", None)``):
    byte-level BPE's, or WordPiece's. Classic BPE has no encode view: its screen never asks."""
    if isinstance(trainer, WordPieceTrainer):
        return WordPieceTokenizer.from_trainer(trainer)
    assert isinstance(trainer, Trainer)  # the screen offers the encode view only then
    return Tokenizer.from_trainer(trainer)


@dataclass
class Motion:
    """Where the trainer is heading: merge ``target``, at ``rate`` merges/s (None: full speed)."""

    target: int
    rate: int | None = None
    playing: bool = False
    """A play (paused by the next key), rather than a step, go to or fast-forward."""
    seq: int = 0
    """The command that started it, so the screen knows which motion went idle."""
    started: float = 0.0
    start: int = 0

    def goal(self, now: float) -> int:
        """The merge to reach by ``now``."""
        if self.rate is None:
            return self.target
        return min(self.target, self.start + 1 + int((now - self.started) * self.rate))

    def wait(self, now: float, done: int) -> float:
        """Seconds until the next merge is due."""
        if self.rate is None or done < self.goal(now):
            return 0.0
        return max(0.0, self.started + (done - self.start) / self.rate - now)


def serve(
    commands: Connection,
    reports: Connection,
    inputs: Inputs,
    options: TrainOptions,
    resume: tuple[str, list[tuple[bytes, bytes]]] | None = None,
    follow: Sequence[str] = (),
) -> None:
    """The process's main: load (and redo the merges of a ``resume``: its directory and
    merges), start following the words ``follow``, then obey until told to quit or the
    screen goes away."""
    try:
        _Server(commands, reports, options).run(inputs, resume, follow)
    except (BrokenPipeError, EOFError):
        pass  # the screen has gone: nothing left to report to
    except BaseException:
        reports.send(("crashed", traceback.format_exc()))


class _Server:
    def __init__(self, commands: Connection, reports: Connection, options: TrainOptions) -> None:
        self.commands, self.reports, self.options = commands, reports, options
        self.posted_at = 0.0
        self.extras = Extras()
        """Whether the pair in the corpus is shown, the corpus's characters, the followed words."""
        self.last: MergeStep | None = None
        """The newest recorded step, so a sample taken between motions still shows it."""
        self.merged: MergeInCorpus | None = None
        """Its pair in the corpus words, before and after (while that panel is shown)."""

    def run(self, inputs: Inputs, resume: tuple[str, list[tuple[bytes, bytes]]] | None, follow: Sequence[str]) -> None:
        def progress(phase: str, done: int, total: int | None) -> None:
            if phase == "read":
                self.reports.send(("reading", done, total))

        try:
            trainer = self.options.load(inputs, progress)
            if resume is not None:
                assert isinstance(trainer, Trainer)  # the command refuses --resume with --classic and WordPiece
                replay_saved(trainer, resume[1], resume[0], self.options.counts or label([str(i) for i in inputs]))
        except BpeError as e:
            self.reports.send(("failed", e))
            return
        bad = trainer.summary.bad_records if trainer.summary else 0
        if bad:
            self.reports.send(("notice", f"skipped {bad:,} bad record{'' if bad == 1 else 's'} (--skip-bad-records)", "warning"))
        skipped = trainer.summary.skipped_inputs if trainer.summary else ()
        if skipped:
            more = f" and {len(skipped) - 1:,} more" if len(skipped) > 1 else ""
            self.reports.send(("notice", f"skipped {skipped[0]}{more} (--skip-bad-inputs)", "warning"))
        trainer.progress = None
        if isinstance(trainer, Trainer):
            table = trainer.word_table()
            for word in follow:
                self._follower(trainer).follow(word, table)
            self.reports.send(("sampled", sample(trainer, None, extras=self.extras)))
            self.extras.characters = CharacterCounts.from_table(table)  # the screen opened without waiting for it
            del table
        else:
            self.extras.characters = CharacterCounts({})  # classic BPE's and WordPiece's tokens are strings: no parts of characters
        self.reports.send(("sampled", sample(trainer, None, extras=self.extras)))
        motion: Motion | None = None
        while True:
            wait = IDLE_POLL if motion is None else motion.wait(time.monotonic(), trainer.merges_done)
            if self.commands.poll(wait):
                while True:  # obey everything sent so far before merging on
                    seq, name, arg = self.commands.recv()
                    if name == "quit":
                        return
                    motion = self.obey(trainer, motion, seq, name, arg)
                    if not self.commands.poll(0):
                        break
            if motion is not None and self.move(trainer, motion):
                self.reports.send(("idle", motion.seq))
                motion = None

    def obey(self, trainer: AnyTrainer, motion: Motion | None, seq: int, name: str, arg: object) -> Motion | None:
        """The motion after command ``name``; saving and handing out the tokenizer happen here."""
        # Steps add up: "n n n" goes three past where the previous step was heading.
        base = trainer.merges_done if motion is None or motion.playing else motion.target

        def clamp(k: int) -> int:
            return max(0, min(k, trainer.merges_planned))

        if name == "by":
            assert isinstance(arg, int)  # merges to step: 1, or -1 for one back
            if arg > 0 and trainer.finished and base >= trainer.merges_done:
                self.reports.send(("notice", f"training is done: merge {trainer.merges_done:,} is the last", "information"))
            return Motion(clamp(base + arg), seq=seq)
        if name == "to":
            assert isinstance(arg, int)  # the merge to go to
            return Motion(clamp(arg), seq=seq)
        if name == "play":
            assert arg is None or isinstance(arg, int)  # merges per second (None: full speed)
            return Motion(trainer.merges_planned, arg, True, seq, time.monotonic(), trainer.merges_done)
        if name == "pause":
            return None
        if name == "save":
            self.reports.send(save_report(self.options, trainer, str(arg), f"merge {trainer.merges_done:,}"))
        elif name == "files":
            self.reports.send(("files", trainer.merges_done, self.options.files(trainer)))
        elif name == "tokenizer":
            self.reports.send(("tokenizer", tokenizer_of(trainer)))
        elif name == "watch":
            self.watch(trainer, bool(arg))
        elif name == "follow":
            self.follow(trainer, str(arg))
        elif name == "trace":
            assert isinstance(arg, tuple)  # (file name, TraceOf)
            self.trace(trainer, *arg)
        return motion

    def follow(self, trainer: AnyTrainer, word: str) -> None:
        """Follow ``word``, or stop following it if it is followed."""
        assert isinstance(trainer, Trainer)  # the screen offers following only then
        follower = self._follower(trainer)
        if word in follower.words:
            follower.unfollow(word)
        else:
            follower.follow(word, trainer.word_table())
        self.reports.send(("sampled", sample(trainer, self.last, self.merged, self.extras)))

    def _follower(self, trainer: Trainer) -> Follower:
        """The followed words, made with the first: most runs follow none, and its
        pre-tokenizer would cost each served tab's trainer about 0.4 MiB."""
        if self.extras.follower is None:
            self.extras.follower = Follower(trainer.pattern, trainer.special_tokens)
        return self.extras.follower

    def trace(self, trainer: AnyTrainer, name: str, about: TraceOf) -> None:
        """The merges so far, redone as recorded steps, as a trace file's text."""
        records = replay_records(trainer)
        self.reports.send(("trace", name, trace_text(name, records, about, self.extras.characters)))

    def watch(self, trainer: AnyTrainer, shown: bool) -> None:
        """Start or stop sampling where pairs lie. Shown after a merge, redo that merge
        (back one, rebuilt, and a watched step) so the panel has it at once."""
        self.extras.watching = shown and isinstance(trainer, Trainer)  # positions are the byte-level core's
        self.merged = None
        if shown and trainer.merges_done and not trainer.stopped_early:
            assert isinstance(trainer, Trainer)  # the screen offers the panel only then
            trainer.goto(trainer.merges_done - 1)
            self.last, self.merged = watched_step(trainer)
        self.reports.send(("sampled", sample(trainer, self.last, self.merged, self.extras)))

    def move(self, trainer: AnyTrainer, motion: Motion) -> bool:
        """One slice of ``motion``; True once it has arrived."""
        if motion.target < trainer.merges_done:
            # Back: the engine redoes the known merges up to just before the target; the
            # last one is then a recorded step, so the screen can show what it changed.
            trainer.goto(max(0, motion.target - 1))
            motion.start, motion.started = trainer.merges_done, time.monotonic()
        goal = motion.goal(time.monotonic())
        last, merged = None, None
        if goal > trainer.merges_done:
            deadline = time.monotonic() + SLICE if motion.rate is None else None
            last, merged = self.advance(trainer, goal, deadline)
            if last is not None:  # None: no merge left to do, and the newest record still shows the last one
                self.last, self.merged = last, merged
        arrived = trainer.merges_done >= motion.target or trainer.finished
        now = time.monotonic()
        if arrived or (last is not None and now - self.posted_at >= FRAME):
            self.posted_at = now
            self.reports.send(("sampled", sample(trainer, self.last, self.merged, self.extras)))
        return arrived

    def advance(self, trainer: AnyTrainer, goal: int, deadline: float | None) -> tuple[MergeStep | None, MergeInCorpus | None]:
        """Merge towards ``goal`` (until ``deadline``); the last merge is a recorded step,
        watched in the corpus words while the panel is shown."""
        if deadline is None:
            trainer.run(until=goal - 1)
        else:
            while trainer.merges_done < goal - 1 and time.monotonic() < deadline:
                trainer.run(until=min(goal - 1, trainer.merges_done + CHUNK))
        if self.extras.watching:
            assert isinstance(trainer, Trainer)  # watching is set only for one (see ``watch``)
            return watched_step(trainer)
        return trainer.step(), None
