"""Files a command wrote over, said on stderr once it has written their new contents."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path


def existing(paths: Iterable[Path]) -> list[Path]:
    """The ones of ``paths`` already there: looked at before writing, said after."""
    return [path for path in paths if path.exists()]


def say_replaced(replaced: list[Path]) -> None:
    """``bpe-tui: replaced A, B`` when there are any."""
    if replaced:
        print(f"bpe-tui: replaced {', '.join(map(str, replaced))}", file=sys.stderr)
