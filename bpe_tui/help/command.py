"""``bpe-tui explain [SCREEN]``: the help a screen shows on ``?``, printed in the terminal."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.style import Style

from engine import SettingsError


def run_explain(args: argparse.Namespace) -> int:
    from bpe_tui.app import BpeApp
    from bpe_tui.help.text import SCREEN_HELP, render_help

    entry = SCREEN_HELP.get(args.screen)
    if entry is None:
        raise SettingsError(f"explain {args.screen}: no such screen (choose from {', '.join(SCREEN_HELP)})")
    console = Console(highlight=False)
    console.print(f"bpe-tui {args.screen}: {entry.title}", style="bold underline")
    console.print()
    console.print(render_help(entry, BpeApp.BINDINGS, heading=Style(bold=True), dim=Style(dim=True)))
    return 0
