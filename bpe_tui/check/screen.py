"""The check screen: the student's code running, then the verdict, then where it goes wrong.

While the student's function runs (in a process of its own, ``bpe_tui.check.student``) the
screen counts the seconds against the time limit; then the exact trainer and the
recount-everything trainer are timed, and the verdict shown (``bpe_tui.check.verdict``). A
merge that differs opens the training screen just before it, paused, the two pairs marked
(the app opens it: ``OpenTraining``); ids that differ open the encode view at their
pre-token (``OpenEncodeAt``). ``q`` there comes back here, ``o`` goes there again, ``q`` here
quits with the check's exit status.

The student's code runs with the user's rights: a served app never runs it (``bpe-tui serve``
refuses ``check``, and this screen refuses to run in a browser).
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from bpe_tui.check.jobs import Check, TrainingCheck, run_check
from bpe_tui.check.student import Stopped
from bpe_tui.check.verdict import Verdict, shown
from bpe_tui.common.child_process import ensure_running
from bpe_tui.common.durations import show_seconds
from bpe_tui.common.navigation import Failed, OpenEncodeAt, OpenTraining
from bpe_tui.common.screen_help import ScreenHelp
from engine import BpeError

NOT_SERVED = "bpe-tui check runs your own Python file with this machine's rights: run it in a terminal, never in a served app."


class CheckScreen(Screen[None]):
    """One check: what runs now, then the verdict and the way to where it went wrong."""

    CSS_PATH = "screen.tcss"
    AUTO_FOCUS = "#verdict-scroll"
    BINDINGS = [
        Binding(
            "o",
            "open",
            "open where it differs",
            tooltip="Open the training screen (or encode view) where yours first differs",
            id="check.open",
        ),
        Binding("q", "quit", "quit", tooltip="Quit bpe-tui with the check's exit status (0, 1 or 2)", id="check.quit"),
    ]

    SCREEN_HELP = ScreenHelp(
        title="the check",
        intro=(
            "bpe-tui check holds your own BPE against the exact one. A trainer, FILE.py:FUNCTION, is "
            "called as CS336's run_train_bpe is, FUNCTION(input_path, vocab_size, special_tokens), "
            "and must return (vocab, merges): vocab a dict[int, bytes], merges a list of (bytes, "
            "bytes) tuples. An encoder, FILE.py:CLASS with --model DIR, is built as CLASS(vocab, "
            "merges, special_tokens) from the model's files and must encode to the engine's ids "
            "and decode back to the text. Your code runs in a process of its own, with your rights, "
            "for at most --timeout seconds (600 unless told); the seconds count on screen."
        ),
        panels=(
            (
                "N of N merges match; the vocabulary matches",
                "Every merge is the rule's, in the same order, and every id of the vocabulary holds the "
                "same token: the 256 bytes (ids 0-255), the special tokens, then each merge's token in "
                "order. Then the times: yours, the optimized trainer's (engine.Trainer: counting and "
                "merging) and the recount-everything trainer's (it recounts every pair before every "
                "merge, as a first trainer does; stopped after 60 s).",
            ),
            (
                "merge K differs",
                "The first merge of yours that is not the rule's, numbered from 1 as the training screen "
                "numbers them, both pairs written as your code has them, (b' t', b'he'). counts: how "
                "often each pair stands in the corpus as merged so far (merges 1 to K-1 agree, so the "
                "corpus is the same for both). why: the rule's pair occurs more often (the most frequent "
                "pair merges first), or the two tie and the tie goes to the lexicographically greater "
                "pair of byte strings (lecture 001: max over (count, pair)): the left tokens are compared "
                "first, byte by byte, and a prefix is smaller than what goes on past it. likely: what "
                "your code seems to do instead (the smaller pair on a tie, pairs counted inside a special "
                "token, across two pre-tokens, a count left stale beside the last merge). after it: how "
                "many of the later merges still agree, number for number (a tie broken the other way "
                "often swaps two merges and leaves the rest). The training screen opens just before "
                "merge K, paused, the rule's pair and yours marked; n makes the rule's merge.",
            ),
            (
                "the vocabulary differs",
                "Every merge agrees but an id holds another token: the first such id and both tokens. "
                "The same tokens under other ids is another layout (CS336's tests compare the "
                "vocabulary as sets and pass; GPT-2's and bpe-tui's files have the bytes first).",
            ),
            (
                "an encoder: token N differs",
                "Your encoder and the engine's encode the text given, then hard texts: the empty "
                "string, whitespace runs, emoji and CJK, contractions and numbers, special tokens side "
                "by side, inside words, cut short, and two that overlap (the longer must win). The "
                "first text and token where the ids differ, the pre-token that token lies in, both "
                "tokenizations of it and the merges the rule applied there, the lowest rank first "
                "each round; the encode view opens at that pre-token. Then decode(encode(text)) must "
                "give each text back.",
            ),
            (
                "raised, timed out, the wrong shape",
                "Nothing to compare (exit status 2): your code's exception with your own frames only, "
                "file, line and the code there (none of bpe-tui's); a time-out; what it returned when "
                "that is not the shape asked for (merges[3] is a str: a tuple of two bytes was "
                "expected). The end of what your code printed shows below the verdict.",
            ),
        ),
        token_marks=False,
    )
    """What ``?`` and ``bpe-tui explain check`` say of this screen."""

    class Phase(Message):
        """What the check is doing now, and for how many seconds."""

        def __init__(self, what: str, seconds: float | None) -> None:
            super().__init__()
            self.what, self.seconds = what, seconds

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, CheckScreen.Phase)

    class Done(Message):
        def __init__(self, verdict: Verdict) -> None:
            super().__init__()
            self.verdict = verdict

    def __init__(self, check: Check) -> None:
        super().__init__()
        self.check = check
        self.verdict: Verdict | None = None
        """Once the check is over."""
        self._stopping = False
        # The training screen it opens runs its trainer in a fork server's child, started
        # now, before the app captures stderr.
        ensure_running()

    def compose(self) -> ComposeResult:
        yield Static(f" check · {self.check.title}", id="check-title")
        yield Static(id="check-phase")
        with VerticalScroll(id="verdict-scroll") as scroll:
            scroll.border_title = "result"
            yield Static(id="verdict")
            yield Static(id="printed")
        yield Footer()

    def on_mount(self) -> None:
        if self.app.is_web:  # never reached (serve refuses check): said rather than run, should it be
            self.query_one("#check-phase", Static).update(Text(NOT_SERVED, "bold"))
            return
        self._run()

    @work(thread=True, exclusive=True, group="check")
    def _run(self) -> None:
        worker = get_current_worker()

        def phase(what: str, seconds: float | None) -> None:
            self.post_message(self.Phase(what, seconds))

        try:
            verdict = run_check(self.check, phase, lambda: worker.is_cancelled or self._stopping, headless=False)
        except Stopped:
            return
        except BpeError as e:  # the corpus or model cannot be read now
            self.post_message(Failed(e))
            return
        self.post_message(self.Done(verdict))

    def on_check_screen_phase(self, message: Phase) -> None:
        limit = f" (time limit {show_seconds(self.check.timeout)})" if message.what.startswith("running") else ""
        seconds = "" if message.seconds is None else f" {show_seconds(message.seconds)}"
        self.query_one("#check-phase", Static).update(Text(f"{message.what}…{seconds}{limit}"))

    def on_check_screen_done(self, message: Done) -> None:
        verdict = self.verdict = message.verdict
        said = {0: "everything agrees", 1: "yours differs", 2: "nothing to compare"}[verdict.code]
        self.query_one("#check-phase", Static).update(Text(f"done: {said} (exit status {verdict.code})", "bold"))
        self.query_one("#verdict", Static).update(shown(verdict.lines))
        if verdict.output:
            printed = Text("your code printed (its last lines):\n", "bold")
            printed.append(verdict.output, "dim")
            self.query_one("#printed", Static).update(printed)
        self.refresh_bindings()
        self.action_open()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open":  # only once there is somewhere to open
            return self.verdict is not None and (self.verdict.merge is not None or self.verdict.encode is not None) or None
        return True

    def action_open(self) -> None:
        verdict = self.verdict
        if verdict is None:
            return
        if verdict.merge is not None and isinstance(self.check, TrainingCheck):
            check = self.check
            self.post_message(OpenTraining([check.corpus], check.options, check.label, verdict.merge))
        elif verdict.encode is not None:
            opening = verdict.encode
            self.post_message(OpenEncodeAt(opening.tokenizer, opening.text, opening.pretoken, opening.note))

    def action_quit(self) -> None:
        self._stopping = True  # the student's process ends with the check
        self.app.exit(return_code=self.verdict.code if self.verdict is not None else 130)
