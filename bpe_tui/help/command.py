"""``bpe-tui explain [SCREEN]``: the help a screen shows on ``?``, printed in the terminal."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.style import Style

from bpe_tui.common.screen_help import render_help
from engine import SettingsError


def run_explain(args: argparse.Namespace) -> int:
    from bpe_tui.app import SCREENS_BY_NAME, BpeApp

    screen = SCREENS_BY_NAME.get(args.screen)
    if screen is None:
        raise SettingsError(f"explain {args.screen}: no such screen (choose from {', '.join(SCREENS_BY_NAME)})")
    entry = screen.SCREEN_HELP
    console = Console(highlight=False)
    console.print(f"bpe-tui {args.screen}: {entry.title}", style="bold underline")
    console.print()
    console.print(render_help(entry, screen.BINDINGS, BpeApp.BINDINGS, heading=Style(bold=True), dim=Style(dim=True)))
    return 0
