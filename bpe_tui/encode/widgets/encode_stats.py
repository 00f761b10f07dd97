"""How much the encode compresses: bytes, characters, tokens and bytes per token.

Beside it, the same text as plain UTF-8 bytes, one token per byte: the 1.00 bytes per
token that byte-level BPE starts from before any merge.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from bpe_tui.encode.walk import EncodeWalk

RAW_BYTES_SHOWN = 48
"""Leading bytes of the text shown in hex; the counts cover all of it."""


def compression(text: str, tokens: int) -> tuple[int, int, float]:
    """Bytes, characters and bytes per token of ``text`` encoded as ``tokens`` tokens."""
    size = len(text.encode("utf-8"))
    return size, len(text), size / tokens if tokens else 0.0


class EncodeStats(Static):
    """Counts for the text at the current step and at the end, against plain bytes."""

    def show_step(self, walk: EncodeWalk, k: int) -> None:
        size, chars, per_token = compression(walk.text, len(walk.ids))
        now = sum(len(parts) for parts in walk.parts(k))
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        table.add_row("bytes", str(size))
        table.add_row("characters", str(chars))
        table.add_row(f"tokens at step {k}", str(now))
        table.add_row("tokens at the end", str(len(walk.ids)))
        table.add_row("bytes per token", f"{per_token:.2f}")
        raw = walk.text.encode("utf-8")
        hex_bytes = " ".join(f"{b:02x}" for b in raw[:RAW_BYTES_SHOWN]) + (" …" if len(raw) > RAW_BYTES_SHOWN else "")
        plain = Text.assemble(("as plain UTF-8 bytes: ", "bold"), f"{size} tokens, 1.00 bytes per token")
        self.update(Group(table, plain, Text(hex_bytes, style="dim")))
