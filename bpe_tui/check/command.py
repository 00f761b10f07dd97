"""``bpe-tui check FILE.py:NAME ...``: a student's trainer or encoder held against the exact one.

``check FILE.py:FUNCTION CORPUS --vocab-size N [--special-token T ...]`` calls the student's
trainer on one plain-text corpus (the bundled sample when none is named) and compares its
merges and vocabulary with the exact trainer's; ``check FILE.py:CLASS --model DIR [--text T |
--file F]`` builds the student's encoder from a model's files and compares its ids on that
text and on hard texts. Without ``--headless`` the check screen opens, then the training
screen (or the encode view) where theirs first differs; with it, the seconds count on stderr
while their code runs and the verdict is printed. Exit status 0 when everything agrees, 1
when something differs, 2 when there is nothing to compare (their code raised: its own
frames on stderr; it timed out; it returned the wrong shape: one line), 130 interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from rich.console import Console

from bpe_tui.check.jobs import Check, EncodingCheck, TrainingCheck, run_check
from bpe_tui.check.student import Target, end_all
from bpe_tui.check.verdict import FAILED, Verdict, plain_lines
from bpe_tui.common.corpus import chosen_corpus
from bpe_tui.common.durations import show_seconds
from bpe_tui.common.text_input import read_text
from engine import SettingsError, Tokenizer
from engine.corpus.sources import TEXT, check_utf8, expand_inputs
from engine.train.settings import TrainOptions

DEFAULT_VOCAB = 1000
"""As ``train``'s (the parser leaves it None, to tell a trainer's check from an encoder's)."""


def run_check_command(args: argparse.Namespace) -> int:
    """Check every name and path first (one line if one cannot work), then run the check.
    SIGTERM stops it as Ctrl-C does, the student's process with it (exit status 130)."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _check(args)
    finally:
        end_all()
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _check(args: argparse.Namespace) -> int:
    target = Target.parse(args.target)
    if args.timeout <= 0:
        raise SettingsError(f"--timeout {args.timeout:g}: give your code some seconds to run")
    if args.model is not None:
        return _run(args, _encoding_check(args, target))
    if args.text is not None or args.file is not None:
        raise SettingsError("--text and --file go with --model: a trainer is checked on CORPUS")
    corpus = [] if args.corpus is None else [args.corpus]
    options = TrainOptions.checked(corpus, DEFAULT_VOCAB if args.vocab_size is None else args.vocab_size, args.special_tokens)
    sources = expand_inputs(corpus) if corpus else []
    if corpus and (
        len(sources) != 1 or not Path(args.corpus).is_file() or any(s.format != TEXT or s.compression or s.stream for s in sources)
    ):
        raise SettingsError(f"{args.corpus}: your function reads one plain-text file (its input_path): name one")
    if corpus:  # else their code would fail on it, and be blamed
        check_utf8(args.corpus)
    with chosen_corpus(corpus, options) as (inputs, label):
        return _run(args, TrainingCheck(target, inputs[0], label, options, args.timeout))


def _encoding_check(args: argparse.Namespace, target: Target) -> EncodingCheck:
    for given, flag in ((args.corpus, "CORPUS"), (args.vocab_size, "--vocab-size"), (args.special_tokens, "--special-token")):
        if given is not None:
            raise SettingsError(f"{flag} goes with a trainer: an encoder (--model) takes the model's vocabulary, merges and special tokens")
    tokenizer = Tokenizer.load(args.model)
    if not isinstance(tokenizer, Tokenizer):
        raise SettingsError(f"{args.model}: a WordPiece model: check holds byte-level BPE encoders")
    args.json = False  # read_text asks: --file - reads standard input only when headless
    text = read_text(args) if args.text is not None or args.file is not None else None
    return EncodingCheck(target, args.model, tokenizer, text, args.timeout)


def _run(args: argparse.Namespace, check: Check) -> int:
    if args.headless:
        return _headless(check)
    from bpe_tui.app import BpeApp
    from bpe_tui.check.screen import CheckScreen

    screen = CheckScreen(check)
    app = BpeApp(screen)
    app.run()
    if app.failure is not None:
        raise app.failure
    if screen.verdict is None:
        print("bpe-tui: check stopped before its verdict", file=sys.stderr)
        return 130
    return screen.verdict.code


def _headless(check: Check) -> int:
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    with errors.status("", spinner="dots") if errors.is_terminal else _Quiet() as status:

        def phase(what: str, seconds: float | None) -> None:
            limit = f" (time limit {show_seconds(check.timeout)})" if what.startswith("running") else ""
            status.update(f"{what}…{'' if seconds is None else ' ' + show_seconds(seconds)}{limit}")

        verdict = run_check(check, phase)
    print_verdict(verdict, errors)
    return verdict.code


def print_verdict(verdict: Verdict, errors: Console) -> None:
    """Agree or differ: the lines on stdout. Nothing to compare: on stderr, the first after
    ``bpe-tui: ``."""
    lines = plain_lines(verdict.lines)
    if verdict.code == FAILED:
        first, *rest = lines
        errors.print("bpe-tui: ", first, sep="", crop=False)
        for line in rest:
            errors.print(line, crop=False)
        return
    out = Console(highlight=False, soft_wrap=True)
    for line in lines:
        out.print(line, crop=False)


class _Quiet:
    """Stands in for the status line when stderr is not a terminal: says nothing."""

    def __enter__(self) -> _Quiet:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, text: str) -> None:
        pass
