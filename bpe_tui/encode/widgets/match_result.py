"""The running result of a WordPiece encode: tokens and ``[UNK]`` so far and at the end,
characters per token, lookups made, and the ids so far (the newest that fit, when they are
many)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from bpe_tui.encode.longest_match import LongestMatchWalk


def _packed(ids: list[str], width: int) -> list[str]:
    """``ids`` in lines of at most ``width`` characters."""
    out: list[str] = []
    for word in ids:
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def newest_ids(ids: list[int], width: int, lines: int) -> list[str]:
    """``ids`` in at most ``lines`` lines of ``width`` characters: all of them when they fit,
    else the newest, after ``…``."""
    words = [str(i) for i in ids]
    packed = _packed(words, width)
    if len(packed) <= lines:
        return packed
    kept: list[str] = []
    room = lines * width
    for word in reversed(words):  # the newest that fit, with room to spare for the line ends
        room -= len(word) + 1
        if room < width // 2 + 2:
            break
        kept.append(word)
    packed = _packed(["…", *reversed(kept)], width)
    while len(packed) > lines:
        kept.pop()
        packed = _packed(["…", *reversed(kept)], width)
    return packed


class MatchResult(Static):
    """Counts at the current point of the walk and at the end."""

    ROWS = 6
    """Rows of counts above the ids."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[LongestMatchWalk, int] | None = None

    def show_step(self, walk: LongestMatchWalk, at: int) -> None:
        self._shown = walk, at
        ids = [i for i, _ in walk.tokens(at)]
        chars, end = len(walk.text), len(walk.ids)
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        table.add_row("", Text("so far", style="bold"), Text("end", style="bold"))
        table.add_row("tokens", str(len(ids)), str(end))
        table.add_row("[UNK] words", str(walk.unknown_words(at)), str(walk.unknown_words(walk.lookups)))
        read = walk.characters_read(at)
        table.add_row("characters", str(read), str(chars))
        table.add_row("chars/token", f"{read / len(ids):.2f}" if ids else "-", f"{chars / end:.2f}" if end else "-")
        table.add_row("lookups", str(min(at, walk.lookups)), str(walk.lookups))
        width, height = self.content_size
        lines = newest_ids(ids, max(width, 20), max(height - self.ROWS - 1, 1))
        listed = Text("ids so far", style="bold")
        listed.append("\n" + "\n".join(lines) if lines else " none yet", style="" if lines else "dim")
        self.update(Group(table, listed))

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show_step(*self._shown)
