"""The Textual application: opens the screens, and owns the way between them.

Screens never import one another: a screen that wants another posts a request
(``bpe_tui.common.navigation``) and the app opens the screen asked for. ``SCREENS_BY_NAME``
lists the screens by the name ``bpe-tui explain`` takes; each carries its own ``SCREEN_HELP``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Label

from bpe_tui.check.screen import CheckScreen
from bpe_tui.common.corpus import sample_corpus
from bpe_tui.common.downloads import download
from bpe_tui.common.navigation import Ask, Confirm, Deliver, Failed, OpenCompare, OpenEncode, OpenEncodeAt, OpenTraining
from bpe_tui.common.prompt import ConfirmScreen, Dialog, PromptScreen
from bpe_tui.common.screen_help import ScreenHelp, Shown, help_for
from bpe_tui.compare.screen import CompareScreen
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.encode.unigram_screen import UnigramEncodeScreen
from bpe_tui.encode.wordpiece_screen import WordPieceEncodeScreen
from bpe_tui.help.screen import HelpScreen
from bpe_tui.race.screen import RaceScreen
from bpe_tui.train.screen import WORDPIECE_HELP, TrainScreen, wordpiece_offers
from bpe_tui.train.unigram.screen import UnigramTrainScreen
from engine import BpeError, SettingsError, Tokenizer
from engine.corpus.sources import TEXT, Source, expand_inputs
from engine.encode.sentencepiece_steps import SentencePieceLattices, SentencePieceMerges
from engine.encode.unigram import UnigramTokenizer
from engine.encode.wordpiece import WordPieceTokenizer
from engine.formats.atomic import atomic_write
from engine.train.settings import DEFAULT_SPECIAL, TrainOptions

SCREENS_BY_NAME: dict[str, type[TrainScreen] | type[EncodeScreen] | type[CompareScreen] | type[RaceScreen] | type[CheckScreen]] = {
    "train": TrainScreen,
    "encode": EncodeScreen,
    "compare": CompareScreen,
    "race": RaceScreen,
    "check": CheckScreen,
}
"""The app's screens by the name ``bpe-tui explain`` takes."""


def training_help(algorithm: str) -> tuple[ScreenHelp, list[BindingType], Shown]:
    """The training screen's help when it trains ``algorithm`` (``bpe-tui explain train
    --algorithm wordpiece``), its keys, and which of its actions it has: Unigram trains on a
    screen of its own, with keys of its own."""
    if algorithm == "wordpiece":
        return WORDPIECE_HELP, TrainScreen.BINDINGS, wordpiece_offers
    if algorithm == "unigram":
        return UnigramTrainScreen.SCREEN_HELP, UnigramTrainScreen.BINDINGS, lambda action: True
    if algorithm == "bpe":
        return TrainScreen.SCREEN_HELP, TrainScreen.BINDINGS, lambda action: True
    raise SettingsError(f"--algorithm {algorithm}: not one of bpe, wordpiece, unigram")


def encode_screen(
    tokenizer: Tokenizer | WordPieceTokenizer | UnigramTokenizer | SentencePieceLattices | SentencePieceMerges, text: str | None
) -> EncodeScreen | WordPieceEncodeScreen | UnigramEncodeScreen:
    """The encode view for ``tokenizer``: BPE's merge by merge (a SentencePiece BPE model's
    too), WordPiece's lookup by lookup, Unigram's position by position through each word's
    lattice (a SentencePiece Unigram model's too)."""
    if isinstance(tokenizer, WordPieceTokenizer):
        return WordPieceEncodeScreen(tokenizer, text)
    if isinstance(tokenizer, UnigramTokenizer | SentencePieceLattices):
        return UnigramEncodeScreen(tokenizer, text)
    return EncodeScreen(tokenizer, text)


def encoding_help(algorithm: str) -> type[EncodeScreen] | type[WordPieceEncodeScreen] | type[UnigramEncodeScreen]:
    """The encode view whose help ``bpe-tui explain encode --algorithm ALGORITHM`` prints."""
    if algorithm == "wordpiece":
        return WordPieceEncodeScreen
    if algorithm == "unigram":
        return UnigramEncodeScreen
    if algorithm == "bpe":
        return EncodeScreen
    raise SettingsError(f"--algorithm {algorithm}: not one of bpe, wordpiece, unigram")


CLASSIC_TOY = "toy-low-lower.txt"
"""The lecture's toy corpus, for classic BPE opened from a screen with no plain-text corpus."""

MIN_SIZE = Size(60, 16)
"""The smallest terminal whose panels still show their content."""


def _sources(training: TrainScreen) -> list[Source]:
    """The files the training screen's inputs stand for (none for saved counts, or when they
    can no longer be read)."""
    options = training.options
    try:
        return expand_inputs(training.inputs, options.skip_bad_inputs, options.stdin_format) if training.inputs else []
    except BpeError:
        return []


KEEP_AT_MOST = 2.0
"""Seconds the app keeps keys for a dialog that neither opens nor closes: then they go on as
if none had been asked for."""


class KeysCaughtUp(Message):
    """Posted where the keys went when a screen asked for a dialog: once it bubbles up to the
    app, so has each key sent there before it that the screen left unhandled."""


class KeyTaken(Message):
    """Posted behind a kept key handed to a dialog: once it bubbles up to the app, the dialog
    has handled that key, and can have the next."""


def fits(size: Size) -> bool:
    return size.width >= MIN_SIZE.width and size.height >= MIN_SIZE.height


class TooSmallScreen(Screen[None]):
    """Stands in for the app while the terminal is below ``MIN_SIZE``; leaves once it fits."""

    DEFAULT_CSS = """
    TooSmallScreen { align: center middle; }
    TooSmallScreen > Label { width: 100%; text-align: center; }
    """

    def compose(self) -> ComposeResult:
        yield Label(id="too-small")

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size)

    def on_screen_resume(self) -> None:
        self._fit(self.app.size)

    def _fit(self, size: Size) -> None:
        if fits(size):
            if self.is_current:  # a resize and a resume may both arrive: leave once
                self.dismiss()
            return
        self.query_one(Label).update(
            f"The terminal is {size.width}×{size.height}: bpe-tui needs at least "
            f"{MIN_SIZE.width}×{MIN_SIZE.height}. Enlarge it, or press ctrl+q to quit."
        )


class BpeApp(App[int]):
    """Opens on ``first_screen``; the screens own their widgets, keys and styles.

    Every key binding of the current screen is also a command in the palette (ctrl+p), and
    each has an id (``train.step``, ...) so ``set_keymap`` can remap it. ``?`` (``app.help``)
    opens the help of whichever screen is current, if ``screen_help`` has an entry for it.
    """

    TITLE = "bpe-tui"
    BINDINGS = [Binding("question_mark", "help", "help", key_display="?", tooltip="What this screen shows, and its keys", id="app.help")]

    def __init__(self, first_screen: Screen[Any]) -> None:
        super().__init__()
        self._first_screen = first_screen
        self.failure: BpeError | None = None
        """Set when a screen hits bad input; the command reports it once the app has closed."""
        self.raw_bytes = False
        """Tokens holding part of a character shown as their bytes only (``x``), not naming it."""
        self._kept: list[events.Key] | None = None
        """The keys typed since a screen asked for a dialog (``keep_keys``), for that dialog;
        None when no dialog is opening."""
        self._returning: list[events.Key] = []
        """Keys sent to the screen before it asked, that it left unhandled: typed before ``_kept``."""
        self._behind = 0
        """How many ``KeysCaughtUp`` are still on their way: keys sent before them may follow."""
        self._dialog: Dialog[Any] | None = None
        """The dialog opened for the kept keys, not yet handed them."""
        self._feeding: Dialog[Any] | None = None
        """The dialog being handed the kept keys, one at a time."""
        self._dialog_closing = False
        """A key that closes the dialog was handed to it: the keys after it wait until it has."""
        self._keeping: Timer | None = None

    def on_mount(self) -> None:
        self.push_screen(self._first_screen)
        self._cover_if_small(self.size)

    def on_resize(self, event: events.Resize) -> None:
        if self._first_screen in self.screen_stack:
            self._cover_if_small(event.size)

    def _cover_if_small(self, size: Size) -> None:
        if not fits(size) and not isinstance(self.screen, TooSmallScreen):
            self.push_screen(TooSmallScreen())

    def action_help(self) -> None:
        entry = help_for(self.screen)
        if entry is not None:
            self.push_screen(HelpScreen(entry, self.screen.BINDINGS, getattr(self.screen, "offers", lambda action: True)))

    # -- what screens ask for -------------------------------------------------------------------

    def on_open_encode(self, request: OpenEncode) -> None:
        self.push_screen(encode_screen(request.tokenizer, request.text))

    def on_open_training(self, request: OpenTraining) -> None:
        self.push_screen(TrainScreen(request.inputs, request.options, label=request.label, check=request.check))

    def on_open_encode_at(self, request: OpenEncodeAt) -> None:
        self.push_screen(EncodeScreen(request.tokenizer, request.text, at=request.pretoken, note=request.note))

    def on_open_compare(self, request: OpenCompare) -> None:
        self.push_screen(CompareScreen.on_sample(request.text, *request.more))

    def on_ask(self, request: Ask) -> None:
        dialog = PromptScreen(request.question, request.value, request.placeholder, request.integer)
        self.push_screen(dialog, partial(self._answered, request.then))

    def on_confirm(self, request: Confirm) -> None:
        dialog = ConfirmScreen(request.question, request.yes, request.no)
        self.push_screen(dialog, partial(self._answered, lambda yes: request.then(bool(yes))))

    # -- the keys typed while a dialog opens ----------------------------------------------------
    #
    # A key reaches a screen's bindings only once the screen has passed it back up to the app,
    # and the dialog a binding asks for opens some messages later: keys typed that fast would
    # reach the screen below, or the dialog before its input has the focus. So from the moment
    # a screen asks (``navigation.ask``), the app keeps every key, those still coming back from
    # the screen first. Once the dialog has the focus it hands them over one at a time, each
    # once the one before has been handled (an input takes a letter at once, but Enter or
    # ctrl+u only when they come back up to the app as bindings), up to the key that closes
    # the dialog; the keys after that one wait for it to close, then go on as typed.

    def keep_keys(self) -> None:
        """Keep the keys typed from now on for the dialog about to open."""
        if self._kept is None:
            self._kept = []
        self._dialog, self._feeding, self._dialog_closing = None, None, False
        if (self.focused or self.screen).post_message(KeysCaughtUp()):
            self._behind += 1
        self._keep_for_now()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded and self._kept is not None:
            self._kept.append(event)
            return
        await super().on_event(event)

    def on_key(self, event: events.Key) -> None:
        """A key a screen left unhandled, sent to it before it asked for a dialog: kept, not
        matched against the keys of whichever screen is current now."""
        if self._behind:
            self._returning.append(event)
            event.prevent_default()
            event.stop()

    async def on_keys_caught_up(self, _: KeysCaughtUp) -> None:
        self._behind = max(0, self._behind - 1)
        await self._start_feeding()

    async def on_dialog_opened(self, opened: Dialog.Opened) -> None:
        self._dialog = opened.dialog
        await self._start_feeding()

    async def _start_feeding(self) -> None:
        dialog = self._dialog
        if self._kept is None or self._behind or dialog is None or dialog is not self.screen:
            return
        self._kept[:0] = self._returning
        self._returning, self._dialog, self._feeding = [], None, dialog
        await self._feed()

    async def on_key_taken(self, _: KeyTaken) -> None:
        await self._feed()

    async def _feed(self) -> None:
        """Hand the dialog the next key kept (the one before it handled)."""
        dialog = self._feeding
        if dialog is None or self._kept is None:  # given up meanwhile
            return
        if not self._kept or dialog is not self.screen:  # all handed over, or it closed some other way
            keys, self._kept, self._feeding = self._kept, None, None
            self._stop_keeping()
            await self._type_keys(keys)
            return
        key = self._kept.pop(0)
        closing = key.key in dialog.CLOSING_KEYS
        if closing:
            self._feeding, self._dialog_closing = None, True
        self._keep_for_now()
        await super().on_event(events.Key(key.key, key.character))
        if not closing:
            (self.focused or self.screen).post_message(KeyTaken())

    async def _answered(self, then: Callable[[Any], None], answer: object) -> None:
        then(answer)  # may ask for another dialog, which the keys kept are for
        if self._dialog_closing:
            keys, self._kept, self._dialog_closing = self._kept or [], None, False
            self._stop_keeping()
            await self._type_keys(keys)

    async def _give_up(self) -> None:
        """The dialog did not open, or close, in time: the keys kept go on as typed."""
        keys = [*self._returning, *(self._kept or [])]
        self._kept, self._returning, self._behind = None, [], 0
        self._dialog, self._feeding, self._dialog_closing, self._keeping = None, None, False, None
        await self._type_keys(keys)

    async def _type_keys(self, keys: list[events.Key]) -> None:
        """``keys`` as if typed now, in order; those after one that asks for a dialog are kept."""
        for i, key in enumerate(keys):
            if self._kept is not None:  # a key asked for a dialog: the rest are for it
                self._kept[:0] = keys[i:]
                return
            await super().on_event(events.Key(key.key, key.character))

    def _keep_for_now(self) -> None:
        self._stop_keeping()
        self._keeping = self.set_timer(KEEP_AT_MOST, self._give_up)

    def _stop_keeping(self) -> None:
        if self._keeping is not None:
            self._keeping.stop()
            self._keeping = None

    def on_deliver(self, request: Deliver) -> None:
        if self.is_web:  # the user's browser downloads it
            name = download(self, Path(request.name).stem, {Path(request.name).name: request.content})
            self.notify(f"{request.what}: downloading {name}")
            return
        try:
            path = atomic_write(request.name, request.content)
        except OSError as e:
            self.notify(f"{request.name}: cannot write the {request.what} ({e.strerror or e})", severity="error")
            return
        self.notify(f"{request.what} written to {path}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "help":  # shown only over a screen that has help
            return help_for(self.screen) is not None
        return True

    def on_failed(self, request: Failed) -> None:
        self.failure = request.error
        self.exit(return_code=2)

    def action_race(self) -> None:
        """Race the recount-everything trainer against the optimized one, on the corpus being
        trained (the bundled sample when there is none)."""
        training = next((s for s in reversed(self.screen_stack) if isinstance(s, TrainScreen)), None)
        if training is not None and training.options.byte_level:  # the race is byte-level
            if not any(s.stream for s in _sources(training)):
                self.push_screen(RaceScreen(training.inputs, training.options, training.label))
                return
            self.notify("The race reads its corpus once for each racer, and a named pipe can be read once: racing on the bundled sample")
        elif training is not None and training.wordpiece:
            self.notify("The race is between two byte-level BPE trainers, not WordPiece: racing on the bundled sample")
        with sample_corpus() as path:  # a real file once installed; the racers read it at once
            self.push_screen(RaceScreen([str(path)], TrainOptions(1000, (DEFAULT_SPECIAL,)), f"{path.name} (bundled sample)"))

    def action_classic(self) -> None:
        """Classic ``</w>`` BPE on the training screen, on the corpus being trained when that
        is one plain-text file, else on the lecture's toy corpus."""
        training = next((s for s in reversed(self.screen_stack) if isinstance(s, TrainScreen)), None)
        sources = _sources(training) if training is not None else []
        if training is not None and len(sources) == 1 and sources[0].format == TEXT and not (sources[0].compression or sources[0].stream):
            self.push_screen(TrainScreen(sources[0].path, TrainOptions(1000, (), classic="whitespace"), label=training.label))
            return
        with sample_corpus(CLASSIC_TOY) as path:
            self.push_screen(TrainScreen(path, TrainOptions(1000, (), classic="whitespace"), label=f"{path.name} (bundled)"))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not isinstance(screen, RaceScreen):
            yield SystemCommand(
                "Race: recount vs optimized",
                "Race the recount-everything trainer against the optimized one on this corpus",
                self.action_race,
            )
        if not (isinstance(screen, TrainScreen) and screen.options.classic):
            yield SystemCommand(
                "Classic BPE (</w>) on this corpus",
                "Train the lectures' word-level BPE with </w> on the training screen",
                self.action_classic,
            )
        # A screen with a tokenizer of its own compares with it through its own key.
        own = hasattr(screen, "action_compare") and screen.check_action("compare", ()) is not False
        if not isinstance(screen, (CompareScreen, TooSmallScreen)) and not own:
            yield SystemCommand(
                "Compare tokenizers",
                "One text cut by character, byte, word and BPE tokenizers, side by side",
                lambda: self.push_screen(CompareScreen.on_sample()),
            )
        for owner in (screen, self):
            for binding in owner.BINDINGS:
                # False: the owner hides that key now (the encode view's q is Back or Quit).
                if isinstance(binding, Binding) and binding.tooltip and owner.check_action(binding.action, ()) is not False:
                    yield SystemCommand(
                        f"{binding.description} ({binding.key_display or binding.key})",
                        binding.tooltip,
                        partial(self.run_action, binding.action, owner),
                    )
