"""WordPiece's heap at work: a lazy max-heap of scores.

A merge of ``a b`` moves ``count(a)``, ``count(b)`` and ``count(ab)``, so the score of every
pair holding one of them moves, most of them up: each of those pairs gets a fresh entry.
An entry whose counts are no longer its pair's is stale: popped, it is dropped, never
re-pushed (the fresh one is on the heap already).
"""

from __future__ import annotations

from rich.text import Text

from bpe_tui.common.tokens import parts_text
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.widgets.heap_stats import HeapStats
from engine import MergeStep


class ScoreHeapStats(HeapStats):
    """Heap size, the pushes of the last merge (every pair whose score moved) and the stale
    entries it dropped."""

    def _last_merge(self, text: Text, snapshot: TrainSnapshot, step: MergeStep) -> None:
        dim, label = self.style_of("panel--dim"), self.style_of("panel--label")
        text.append("last merge ", label)
        text.append("pushed ", dim)
        text.append(f"{len(step.pushes):,}")
        text.append(" (each pair whose score moved)", dim)
        text.append(" · popped ", dim)
        text.append(f"{len(step.stale):,} stale")
        if step.stale:
            text.append(", each dropped", dim)
        for stale in step.stale[: max(0, self.content_size.height - 2)]:
            text.append("\n  stale ", dim)
            text.append_text(parts_text(snapshot.pair(stale.pair), escape_style=dim))
            if stale.actual == 0:
                text.append(f"  entry of count(ab) {stale.heap_count:,}: the pair is gone", dim)
            elif stale.actual != stale.heap_count:
                text.append(f"  entry of count(ab) {stale.heap_count:,}, now {stale.actual:,}: a fresh entry holds it", dim)
            else:
                text.append(f"  entry of count(ab) {stale.heap_count:,}: count(a) or count(b) moved since", dim)
