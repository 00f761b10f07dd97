"""How the corpus looks now: its most frequent words, split into the current tokens."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import parts_text
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel


class CorpusWords(SnapshotPanel):
    """Top pre-tokens by count with their segmentation; the newest token highlighted."""

    BORDER_TITLE = "corpus: top words now"

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, newest = self.style_of("panel--dim"), self.style_of("panel--newest")
        marked = snapshot.last.token if snapshot.last else None
        rows: list[list[Text | str]] = [["count", "tokens", "segmentation"]]
        for word in snapshot.words[: max(1, self.content_size.height - 1)]:
            rows.append(
                [
                    f"{word.count:,}",
                    str(len(word.parts)),
                    parts_text(word.parts, escape_style=dim, marked=marked, marked_style=newest, raw=self.raw),
                ]
            )
        return columns(rows, right=frozenset({0, 1}), styles=[dim])
