"""``bpe-tui explain [SCREEN]``: the help a screen shows on ``?``, printed in the terminal."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.style import Style

from bpe_tui.common.screen_help import ScreenHelp, Shown, render_help
from engine import SettingsError


def run_explain(args: argparse.Namespace) -> int:
    """Print the help of ``args.screen``; the training screen's or the encode view's as it is
    for ``args.algorithm`` when one is given (``explain train --algorithm wordpiece``,
    ``explain encode --algorithm unigram``)."""
    from bpe_tui.app import SCREENS_BY_NAME, BpeApp, encoding_help, training_help

    screen = SCREENS_BY_NAME.get(args.screen)
    if screen is None:
        raise SettingsError(f"explain {args.screen}: no such screen (choose from {', '.join(SCREENS_BY_NAME)})")
    entry: ScreenHelp = screen.SCREEN_HELP
    bindings = screen.BINDINGS
    shown: Shown = lambda action: True  # noqa: E731
    algorithm = getattr(args, "algorithm", None)
    if algorithm is not None and args.screen == "encode":
        view = encoding_help(algorithm)
        entry, bindings = view.SCREEN_HELP, view.BINDINGS
    elif algorithm is not None:
        if args.screen != "train":
            raise SettingsError(f"explain {args.screen} --algorithm {algorithm}: --algorithm goes with explain train or encode")
        entry, bindings, shown = training_help(algorithm)
    console = Console(highlight=False)
    console.print(f"bpe-tui {args.screen}: {entry.title}", style="bold underline")
    console.print()
    help_text = render_help(entry, bindings, BpeApp.BINDINGS, heading=Style(bold=True), dim=Style(dim=True), shown=shown)
    console.print(help_text)
    return 0
