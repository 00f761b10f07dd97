"""How screens move between each other without knowing one another.

A screen never imports another screen: it posts one of these requests, which bubbles up to
the app, and the app (``bpe_tui.app``) opens the screen asked for (or, on ``Failed``, closes;
on ``Deliver``, writes or downloads a file).
A screen asks through ``ask``, never posting ``Ask`` or ``Confirm`` itself: the keys typed
after the one that asked then reach the dialog, however fast they come.
``over_another`` tells a screen whether it was opened over another of ours, so its ``q`` goes
back rather than quits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textual.message import Message
from textual.screen import Screen

from engine import BpeError, Tokenizer
from engine.compare.baselines import SpanTokenizer

if TYPE_CHECKING:
    from engine.check.merges import MergeDifference
    from engine.encode.unigram import UnigramTokenizer
    from engine.encode.wordpiece import WordPieceTokenizer
    from engine.train.settings import TrainOptions


class OpenEncode(Message):
    """Open the encode view on ``tokenizer``, stepping through ``text`` (None: its sample):
    the app opens the view of its kind, BPE's, WordPiece's or Unigram's."""

    def __init__(self, tokenizer: Tokenizer | WordPieceTokenizer | UnigramTokenizer, text: str | None) -> None:
        super().__init__()
        self.tokenizer, self.text = tokenizer, text


class OpenEncodeAt(Message):
    """Open BPE's encode view on ``tokenizer`` and ``text`` at pre-token ``pretoken`` (an
    index into its ``encode_steps``), ``note`` on its status line: where a student's encoder
    first differs (``bpe-tui check``)."""

    def __init__(self, tokenizer: Tokenizer, text: str, pretoken: int, note: str) -> None:
        super().__init__()
        self.tokenizer, self.text, self.pretoken, self.note = tokenizer, text, pretoken, note


class OpenTraining(Message):
    """Open the training screen on ``inputs`` with ``options``, paused just before merge
    ``check.index``, where a student's merges first differ (``bpe-tui check``)."""

    def __init__(self, inputs: list[str], options: TrainOptions, label: str, check: MergeDifference) -> None:
        super().__init__()
        self.inputs, self.options, self.label, self.check = inputs, options, label, check


class OpenCompare(Message):
    """Open the compare view on ``text`` (None: its sample): character, byte, word and BPE
    built from the bundled sample, then ``more``, the first of which is the reference."""

    def __init__(self, text: str | None, *more: SpanTokenizer) -> None:
        super().__init__()
        self.text, self.more = text, more


class Ask(Message):
    """Ask the user one line (``PromptScreen``); ``then`` receives the answer, None if cancelled."""

    def __init__(
        self, question: str, then: Callable[[str | None], None], value: str = "", placeholder: str = "", integer: bool = False
    ) -> None:
        super().__init__()
        self.question, self.then = question, then
        self.value, self.placeholder, self.integer = value, placeholder, integer


class Deliver(Message):
    """Hand the user a file the screen made (a trace, a picture of the screen): the app writes
    ``content`` to ``name`` atomically in a terminal, and sends it as a download in a browser
    (``bpe-tui serve``), where the server's disk is not the user's."""

    def __init__(self, name: str, content: str, what: str) -> None:
        super().__init__()
        self.name, self.content, self.what = name, content, what


class Confirm(Message):
    """Ask the user yes or no (``ConfirmScreen``), the buttons named ``yes`` and ``no``;
    ``then`` receives True for yes."""

    def __init__(self, question: str, then: Callable[[bool], None], yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question, self.then, self.yes, self.no = question, then, yes, no


class Failed(Message):
    """Bad input (``error``): the app closes, and the command reports it (exit status 2)."""

    def __init__(self, error: BpeError) -> None:
        super().__init__()
        self.error = error


@runtime_checkable
class KeepsKeys(Protocol):
    """An app that keeps the keys typed while a dialog opens, and hands them to the dialog."""

    def keep_keys(self) -> None: ...


def ask(screen: Screen[Any], request: Ask | Confirm) -> None:
    """Post ``request`` for the app, which keeps the keys typed from now on for the dialog
    it opens: typed faster than the dialog opens (a paste, a fast typist), they would reach
    ``screen``, or the dialog before its input has the focus."""
    if isinstance(screen.app, KeepsKeys):
        screen.app.keep_keys()
    screen.post_message(request)


def over_another(screen: Screen[Any]) -> bool:
    """Whether ``screen`` was opened over another of ours (``q`` goes back) rather than
    first (``q`` quits)."""
    stack = screen.app.screen_stack
    below = stack[: stack.index(screen)] if screen in stack else []
    return any(type(other) is not Screen for other in below)
