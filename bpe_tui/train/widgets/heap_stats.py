"""The data structures at work: the lazy max-heap, pair_counter and pair_positions.

A merge only lowers the counts of pairs already on the heap, so their entries stay put and
are corrected when they reach the top: popped, found stale, re-pushed with the current count
(or dropped at zero). Only pairs that contain the new token are pushed.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.tokens import chars_label, parts_text
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel
from engine import MergeStep


class HeapStats(SnapshotPanel):
    """Heap size, pushes and stale pops of the last merge, sizes of the pair index."""

    BORDER_TITLE = "data structures"

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, label = self.style_of("panel--dim"), self.style_of("panel--label")
        step = snapshot.last
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("heap ", label)
        text.append(f"{snapshot.heap_size:,} entries")
        text.append(" · ", dim)
        text.append("pair_counter ", label)
        text.append(f"{snapshot.pair_counter_size:,} pairs")
        text.append(" · ", dim)
        text.append("pair_positions ", label)
        text.append(f"{snapshot.stored_positions:,} positions")
        text.append("\n")
        if snapshot.ran_out_unrecorded:
            text.append(f"no pairs left after merge {snapshot.merges_done:,}: nothing on the heap to merge", dim)
        elif step is None:
            text.append("no merge yet: the heap holds one entry per pair", dim)
        else:
            self._last_merge(text, snapshot, step)
        return text

    def _last_merge(self, text: Text, snapshot: TrainSnapshot, step: MergeStep) -> None:
        """What the last merge did to the heap: its pushes, and each stale entry it popped."""
        dim, label = self.style_of("panel--dim"), self.style_of("panel--label")
        repushed = sum(1 for s in step.stale if s.actual)
        text.append("last merge ", label)
        text.append("pushed ", dim)
        text.append(f"{len(step.pushes):,}")
        text.append(" · popped ", dim)
        text.append(f"{len(step.stale):,} stale")
        text.append(f": {repushed:,} re-pushed, {len(step.stale) - repushed:,} dropped", dim)
        for stale in step.stale[: max(0, self.content_size.height - 2)]:
            text.append("\n  stale ", dim)
            text.append_text(parts_text(snapshot.pair(stale.pair), escape_style=dim, raw=self.raw))
            named = "" if self.raw else chars_label(snapshot.pair_chars(stale.pair))  # \x80|\x82 ←们个: whose bytes
            text.append(f" {named}" if named else "", dim)
            text.append(f"  heap said {stale.heap_count:,}, pair_counter says {stale.actual:,}", dim)
            text.append(" → re-pushed" if stale.actual else " → dropped", dim)
