"""What the training screens share, BPE's (and WordPiece's and classic BPE's) and Unigram's:
a trainer in a process of its own, and a screen that drives it.

A thread reads the process's reports and turns them into messages, a burst of snapshots
collapsing to the newest. Keys become numbered commands (``_send``); one that moves, pressed
while the corpus is read, waits and acts once it is (``_ready``). Saving asks before
replacing files the screen did not write, and when served the files go to the browser
instead; ``ctrl+s`` takes a picture of the screen; ``q`` leaves once the trainer has obeyed
every earlier key.

A screen subclasses ``TrainerScreen`` with its process (``trainer_process``), its status
line and panels, its keys that move, and ``UNIT``: what one step makes (a merge, a round).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from textual import work
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from bpe_tui.common.child_process import ChildProcess, Report, ensure_running, listen
from bpe_tui.common.downloads import download
from bpe_tui.common.navigation import Ask, Confirm, Deliver, Failed, ask, over_another
from bpe_tui.train.saving import whole
from engine import BpeError
from engine.train.settings import Inputs, TrainOptions

S = TypeVar("S")
"""The snapshot the trainer's process sends."""


class Activity(Protocol):
    """A status line: what the trainer is doing, then details."""

    activity: str
    detail: str


class TrainerScreen(Screen[None], Generic[S]):
    """A screen driving a trainer that runs in its own process."""

    UNIT: ClassVar[str]
    """What one step makes: "merge", "round"."""
    PICTURE: ClassVar[str]
    """What a picture of the screen is named by, with the steps done: "merge", "Unigram round"."""
    DOWNLOAD: ClassVar[str]
    """The name of the files a served screen's browser downloads, before the steps done."""
    LOADING: ClassVar[str]
    """What the trainer does before the first step can run, as a refusal says it."""
    OPENING_CHARS: ClassVar[int] = 240
    """How much of the corpus's start the encode view opens on."""

    class Sampled(Message):
        """The trainer's state after some steps (or after going back)."""

        def __init__(self, snapshot: object) -> None:
            super().__init__()
            self.snapshot = snapshot

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, TrainerScreen.Sampled)

    class Reading(Message):
        """Reading progress in bytes (total None: a stream, whose size is unknown; ``done``
        None: read, and preparing the first step)."""

        def __init__(self, done: int | None, total: int | None) -> None:
            super().__init__()
            self.done, self.total = done, total

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, TrainerScreen.Reading)

    class Idle(Message):
        """The trainer reached the target of command ``seq``, or has nothing left to do."""

        def __init__(self, seq: int) -> None:
            super().__init__()
            self.seq = seq

    def __init__(self, inputs: Inputs | Path, options: TrainOptions, out: str | None, label: str | None) -> None:
        super().__init__()
        self.inputs = [str(inputs)] if isinstance(inputs, (str, Path)) else [str(i) for i in inputs]
        """Corpus files, directories and glob patterns (none when training from saved counts)."""
        self.label = label or (Path(self.inputs[0]).name if self.inputs else str(options.counts))
        self.out = out
        """Where ``s`` saves without asking: ``--out``, or where it last saved (None: ask)."""
        self._directory = out or "out"
        """What the question for a directory starts from: the last one saved into, or tried."""
        self._options = options
        self._written: set[Path] = set()
        """Directories this screen saved into: saving there again replaces its own files unasked."""
        self._waiting: list[str] = []
        """Keys that step or move, pressed while the corpus is read: their actions, in order."""
        # The trainer's process (and a large corpus's counting pool) come from a fork server,
        # which starts now, before the app captures stderr.
        ensure_running()
        self.snapshot: S | None = None
        """The newest state the trainer's process sent."""
        self._trainer: ChildProcess | None = None
        self._seq = 0
        self.playing = False
        self._quitting = False
        """``q`` was pressed: the screen goes once the trainer has obeyed every earlier key."""
        self._views: deque[Callable[[Any, str | None], None]] = deque()
        """What opens on each tokenizer asked of the trainer (``e``, ``c``), in the order asked."""

    @property
    def options(self) -> TrainOptions:
        return self._options

    # -- to be given by each screen ---------------------------------------------------------

    def trainer_process(self) -> ChildProcess:
        """The trainer's process, started."""
        raise NotImplementedError

    def status_line(self) -> Activity:
        raise NotImplementedError

    def steps_done(self) -> int:
        """Merges or rounds done, as the newest snapshot says (0 before the first)."""
        raise NotImplementedError

    def _show_activity(self) -> None:
        """Say on the status line what the trainer is doing."""
        raise NotImplementedError

    def _other_report(self, kind: str, rest: list[Any]) -> None:
        """A report only this screen's trainer sends; a kind no trainer sends is a bug."""
        self.app.call_from_thread(self.app.exit, return_code=1, message=f"the trainer sent an unknown report {kind!r}")

    # -- the trainer's process ---------------------------------------------------------------

    @work(thread=True, exclusive=True, group="trainer")
    def _run_trainer(self) -> None:
        """Start the trainer's process and pass its reports on as messages until it ends."""
        trainer = self._trainer = self.trainer_process()
        worker = get_current_worker()
        try:
            for report in listen([trainer], lambda: worker.is_cancelled):
                if report is not None:
                    self._report(report[1])
        finally:
            trainer.close(terminate=worker.is_cancelled)  # the app is closing: end a load or motion still running
        if self._quitting:
            self.app.call_from_thread(self._leave)
        elif (how := trainer.death()) and not worker.is_cancelled:
            self.post_message(Failed(BpeError(f"{self.label}: the training process died ({how}: out of memory, or killed)")))

    def _report(self, report: Report) -> None:
        kind, *rest = report
        if kind == "reading":
            self.post_message(self.Reading(*rest))
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
            self.app.call_from_thread(self._views.popleft(), *rest, self._opening_text())
        elif kind == "not saved":
            self.app.call_from_thread(self._not_saved, *rest)
        elif kind == "failed":
            self.post_message(Failed(*rest))
        elif kind == "crashed":
            self.app.call_from_thread(self.app.exit, return_code=1, message=f"the trainer failed:\n{rest[0]}")
        else:
            self._other_report(kind, rest)

    def _opening_text(self) -> str | None:
        """The start of the corpus: something to encode (None: the encode view's own sample)."""
        try:
            return self._options.opening_text(self.inputs, self.OPENING_CHARS)
        except BpeError:  # unreadable since it was read
            return None

    # -- what the thread reports -------------------------------------------------------------

    def _loaded(self, message: TrainerScreen.Sampled) -> S:
        """Keep the snapshot; the first one ends the loading, and the keys pressed while it
        loaded act now, in order."""
        snapshot = self.snapshot = cast(S, message.snapshot)
        if self.has_class("-loading"):
            self.remove_class("-loading")
            self._show_activity()
            self._first_step()
            waiting, self._waiting = self._waiting, []
            for action in waiting:
                getattr(self, f"action_{action}")()
        return snapshot

    def _first_step(self) -> None:
        """What the screen does as soon as the trainer is ready, before the keys that waited."""

    def on_trainer_screen_idle(self, message: Idle) -> None:
        if message.seq == self._seq:  # not an older motion that a newer key replaced
            self.playing = False
            self._show_activity()

    # -- keys --------------------------------------------------------------------------------

    def _send(self, command: str, arg: object = None, activity: str | None = None) -> bool:
        """Send a command to the trainer (refused while the corpus is read)."""
        if self.snapshot is None:
            self.notify(f"still {self.LOADING}")
            return False
        assert self._trainer is not None
        self._seq += 1
        self._trainer.send((self._seq, command, arg))
        if activity is not None:
            self.status_line().activity = activity
        return True

    def _ready(self, action: str) -> bool:
        """Whether the trainer is ready; if not, ``action`` waits for it (a key that steps or
        moves must not be lost while the corpus is read)."""
        if self.snapshot is not None:
            return True
        self._waiting.append(action)
        self._show_activity()
        return False

    def _pause(self) -> None:
        self.playing = False
        self._send("pause")
        self._show_activity()

    def _open_on_tokenizer(self, view: Callable[[Any, str | None], None]) -> None:
        """Pause, ask the trainer for the tokenizer as it is now, and open ``view`` on it."""
        if self.playing:
            self._pause()
        self._views.append(view)  # before asking: the answer comes from another thread
        if not self._send("tokenizer"):
            self._views.pop()

    def action_save(self) -> None:
        if self.app.is_web:  # served: the files go to the browser, never onto the server's disk
            self._send("files")
        elif self.out is not None:
            self._save_to(self.out)
        elif self.snapshot is not None:
            ask(self, Ask(f"Save {self._options.saves} to directory:", self._save_to, self._directory))

    def _save_to(self, directory: str | None) -> None:
        """Save into ``directory``, first asking before replacing files this screen did not write."""
        if directory is None:
            return
        present = [name for name in self._options.file_names if (Path(directory) / name).exists()]
        if present and whole(directory) not in self._written:
            them = "it" if len(present) == 1 else "them"
            question = f"{directory} already holds {', '.join(present)}. Replace {them}?"

            def answered(replace: bool) -> None:
                if replace:
                    self._save(directory)
                else:
                    self.notify(f"not saved: {directory} keeps its files")

            ask(self, Confirm(question, answered, "Replace", "Keep"))
        else:
            self._save(directory)

    def _save(self, directory: str) -> None:
        if self._send("save", directory):
            self.out = self._directory = directory
            self._written.add(whole(directory))

    def _not_saved(self, directory: str, why: str) -> None:
        """A save failed: the next ``s`` asks for a directory again, starting from this one."""
        self.notify(f"not saved: {why}", severity="error")
        if self.out == directory:  # not since saved elsewhere
            self.out = None

    def _download(self, done: int, files: dict[str, str]) -> None:
        name = download(self.app, f"{self.DOWNLOAD}-{done}", files)
        self.notify(f"{self.UNIT} {done:,}: your browser downloads {name}")

    def action_screenshot(self) -> None:
        """A picture of the screen as it is now, taken before the file name is asked."""
        done = self.steps_done()
        svg = self.app.export_screenshot(title=f"bpe-tui · {self.label} · {self.PICTURE} {done:,}")

        def chosen(answer: str | None) -> None:
            if answer:
                self.post_message(Deliver(answer, svg, "picture of the screen"))

        name = f"bpe-tui-{self.PICTURE.lower().replace(' ', '-')}-{done}.svg"
        ask(self, Ask("Save a picture of the screen (SVG) to:", chosen, name))

    def action_quit(self) -> None:
        if self.snapshot is None:  # still loading: nothing to save, and the load is stopped
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
