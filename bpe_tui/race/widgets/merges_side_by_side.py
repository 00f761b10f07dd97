"""The two racers' merge lists, row by row, up to the newest merge both have made."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import parts_text
from bpe_tui.race.state import Race
from bpe_tui.race.widgets.race_panel import RacePanel

BLOCK_WIDTH = 64
"""Columns one block of rows needs; a wide panel shows several blocks side by side."""


class MergesSideBySide(RacePanel):
    """``#  reference  optimized  ✓``: the newest rows that fit, the first mismatch kept in view."""

    COMPONENT_CLASSES = {"merges-side-by-side--header", "merges-side-by-side--bad", "merges-side-by-side--dim"}

    def draw(self, race: Race, now: float) -> RenderableType:
        a, b = (lane.merges for lane in race.lanes)
        newest = min(len(a), len(b))
        mismatch = race.mismatch.index if race.mismatch is not None else None
        if mismatch is not None:
            newest = max(newest, mismatch)
        height = max(1, self.content_region.height - 1)
        blocks = max(1, self.content_region.width // BLOCK_WIDTH)
        fit = height * blocks
        indexes = list(range(max(1, newest - fit + 1), newest + 1))
        if mismatch is not None and mismatch not in indexes:
            indexes = [mismatch, *indexes[len(indexes) - fit + 1 :]]
        if not indexes:
            return Text("no merge from both racers yet", self.style_of("merges-side-by-side--dim"))
        grid = Table.grid(padding=(0, 4))
        chunks = [indexes[i : i + height] for i in range(0, len(indexes), height)]
        grid.add_row(*(self._block(race, chunk) for chunk in chunks))
        return grid

    def _block(self, race: Race, indexes: list[int]) -> Text:
        rows: list[list[Text | str]] = [["#", *(lane.racer.name for lane in race.lanes), ""]]
        styles: list[Style | None] = [self.style_of("merges-side-by-side--header")]
        for i in indexes:
            pair_a, pair_b = (lane.merges[i - 1] if i <= lane.done else None for lane in race.lanes)
            same = pair_a == pair_b
            rows.append([f"{i:,}", self._pair(pair_a), self._pair(pair_b), "✓" if same else "✗ differ"])
            styles.append(None if same else self.style_of("merges-side-by-side--bad"))
        return columns(rows, right=frozenset({0}), styles=styles)

    def _pair(self, pair: tuple[bytes, bytes] | None) -> Text:
        if pair is None:
            return Text("—", self.style_of("merges-side-by-side--dim"))
        return parts_text(list(pair), sep=" + ")
