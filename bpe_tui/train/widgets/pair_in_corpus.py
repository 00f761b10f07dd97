"""Where the pair lives in the corpus: its pair_positions and the words they lie in.

Each word is laid out once as linked cells, ``[position token]``, joined by ``↔`` (each
cell's prev/next links). The next pair's recorded positions are highlighted where it
still starts; the others are stale: a merge visits every recorded position, checks it and
skips it. Below, the last merge: the same words before it and after it, the merged cell
highlighted and each rewired link marked.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text

from bpe_tui.common.tokens import chars_label, parts_text, pieces_text, text_pieces, token_text
from bpe_tui.train.snapshot import MergeInCorpus, TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel
from engine import PairOccurrences, WordCells

LABEL_WIDTH = 14
"""Cells for a word's label (text and count): longer words are cut."""


class PairInCorpus(SnapshotPanel):
    """The next pair's occurrences in the corpus words, and the last merge's before and after."""

    BORDER_TITLE = "the pair in the corpus: pair_positions, prev/next"

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        height = max(1, self.content_size.height)
        upcoming, merged = snapshot.upcoming, snapshot.merged
        # The next pair gets a third of the rows when the last merge is there to show too.
        next_rows = height - 2 if merged is None else max(2, height // 3)
        lines = self._upcoming(snapshot, upcoming, next_rows - (merged is not None))
        if merged is not None:
            lines.append(Text())
            lines += self._merged(snapshot, merged, height - len(lines))
        elif upcoming is not None and len(lines) + 2 <= height:
            lines += [
                Text(),
                Text("press n: the merge joins each live pair into one cell and relinks prev/next", self.style_of("panel--dim")),
            ]
        return Text("\n", no_wrap=True, overflow="ellipsis").join(lines[:height])

    # -- the pair about to merge ------------------------------------------------------------

    def _upcoming(self, snapshot: TrainSnapshot, found: PairOccurrences | None, rows: int) -> list[Text]:
        dim, label = self.style_of("panel--dim"), self.style_of("panel--label")
        if found is None:
            why = "no pair left to merge" if snapshot.stopped_early else "the vocabulary is full"
            return [Text(f"no next merge: {why}", dim)]
        head = Text()
        head.append("next merge ", label)
        head.append_text(parts_text(snapshot.pair(found.pair), sep=" + ", escape_style=dim, raw=self.raw))
        chars = None if self.raw else snapshot.pair_chars(found.pair)
        if chars is not None:
            head.append(f" {chars_label(chars)}", dim)
        head.append(f"  pair_positions: {found.recorded:,} recorded, ", dim)
        head.append(f"{found.live:,} live", self.style_of("panel--up"))
        head.append(", ", dim)
        head.append(f"{found.stale:,} stale", self.style_of("panel--down"))
        lines = [head]
        for word in self._words(found, rows - 1):
            live = [o.position for o in found.occurrences if o.word == word.index and o.live]
            line = self._label(word)
            start = self._start(snapshot, word, live, LABEL_WIDTH + 1)
            line.append_text(self._cells(snapshot, word, live, self.style_of("panel--winner"), start))
            line.append_text(self._stale_notes(snapshot, word, found))
            lines.append(line)
        return lines

    # -- the merge just made ----------------------------------------------------------------

    def _merged(self, snapshot: TrainSnapshot, merged: MergeInCorpus, rows: int) -> list[Text]:
        dim, label, newest = self.style_of("panel--dim"), self.style_of("panel--label"), self.style_of("panel--newest")
        step, before = snapshot.last, merged.before
        assert step is not None
        head = Text()
        head.append(f"last merge #{step.index} ", label)
        head.append_text(parts_text(snapshot.pair(before.pair), sep=" + ", escape_style=dim, raw=self.raw))
        head.append(" → ", dim)
        head.append_text(token_text(step.token, newest, dim))
        head.append(f"  visited {before.recorded:,}: live merged, stale skipped", dim)
        lines = [head]
        for word in self._words(before, (rows - 1) // 2):
            recorded = [o for o in before.occurrences if o.word == word.index]
            after = merged.after[word.index]
            joined = [o.position for o in recorded if (c := after.cell_at(o.position)) is not None and c.token == step.new_id]
            live = [o.position for o in recorded if o.live]
            start = self._start(snapshot, word, live, LABEL_WIDTH + 8)
            first = self._label(word)
            first.append("before ", dim)
            first.append_text(self._cells(snapshot, word, live, self.style_of("panel--winner"), start))
            second = Text(" " * (LABEL_WIDTH + 1))
            second.append("after  ", dim)
            second.append_text(self._cells(snapshot, after, joined, newest, start, rewired_from=word))
            for o in recorded:
                if o.position in joined:
                    continue
                # A live position the merge skipped lost its first token to the merge before it (a a a).
                into = max((c.position for c in after.cells if c.position < o.position), default=None)
                why = "stale" if not o.live else f"its token went into {into}"
                second.append(f"  {o.position} ", dim)
                second.append("skipped", self.style_of("panel--down"))
                second.append(f" ({why})", dim)
            lines += [first, second]
        return lines

    # -- drawing a word ---------------------------------------------------------------------

    @staticmethod
    def _words(found: PairOccurrences, rows: int) -> list[WordCells]:
        """The words of the sampled positions, in pair_positions order, as many as fit."""
        return list(found.words.values())[: max(0, rows)]

    def _label(self, word: WordCells) -> Text:
        count = Text(f" ×{word.count:,}", self.style_of("panel--dim"))
        name = token_text(word.text, escape_style=self.style_of("panel--dim"))
        name.truncate(LABEL_WIDTH - count.cell_len, overflow="ellipsis")
        text = Text.assemble(name, count, no_wrap=True)
        text.pad_right(LABEL_WIDTH + 1 - text.cell_len)
        return text

    def _start(self, snapshot: TrainSnapshot, word: WordCells, positions: list[int], indent: int) -> int | None:
        """Where to start drawing a word too long for the line: one cell before the first
        highlighted one, so the occurrence shows (None: the whole word fits)."""
        if self._cells(snapshot, word, [], Style()).cell_len <= self.content_size.width - indent:
            return None
        cells = word.cells
        for i, cell in enumerate(cells):
            if cell.position in positions:
                return cells[max(0, i - 1)].position
        return None

    def _cells(
        self,
        snapshot: TrainSnapshot,
        word: WordCells,
        marked: list[int],
        mark: Style,
        start: int | None = None,
        rewired_from: WordCells | None = None,
    ) -> Text:
        """``[position token]`` cells linked by ``↔``; the cells of a pair starting at a
        ``marked`` position (or the merged cell) get ``mark``, a link that differs from
        ``rewired_from``'s is drawn as the newest token is."""
        dim, newest = self.style_of("panel--dim"), self.style_of("panel--newest")
        merged = rewired_from is not None
        lit: set[int] = set()
        for cell in word.cells:
            if cell.position in marked:
                lit.add(cell.position)
                if not merged and cell.next is not None:
                    lit.add(cell.next)
        old_next = {c.position: c.next for c in rewired_from.cells} if rewired_from is not None else {}
        text = Text(no_wrap=True, overflow="ellipsis")
        named = dict(
            zip((c.position for c in word.cells), text_pieces([snapshot.token(c.token) for c in word.cells], self.raw), strict=True)
        )
        shown = [c for c in word.cells if start is None or c.position >= start]
        if len(shown) < len(word.cells):
            text.append("… ", dim)
        room = self.content_size.width
        for i, cell in enumerate(shown):
            if text.cell_len > room:  # the rest is cut off anyway: a long word costs no more
                break
            if i:
                rewired = merged and old_next.get(shown[i - 1].position) != cell.position
                text.append("↔", newest if rewired else dim)
            style = mark if cell.position in lit else Style()
            text.append("[", dim + style)
            text.append(f"{cell.position} ", dim + style)
            text.append_text(pieces_text(named[cell.position], style, dim + style))
            text.append("]", dim + style)
        return text

    def _stale_notes(self, snapshot: TrainSnapshot, word: WordCells, found: PairOccurrences) -> Text:
        """Why each stale position of this word no longer holds the pair."""
        dim = self.style_of("panel--dim")
        text = Text()
        for o in found.occurrences:
            if o.word != word.index or o.live:
                continue
            text.append(f"  {o.position} ", dim)
            text.append("stale", self.style_of("panel--down"))
            cell = word.cell_at(o.position)
            if cell is None:
                text.append(" (merged into the cell before)", dim)
            else:
                after = word.cell_at(cell.next) if cell.next is not None else None
                now = [snapshot.token(cell.token)] + ([snapshot.token(after.token)] if after else [])
                text.append(" (now ", dim)
                text.append_text(parts_text(now, escape_style=dim, raw=self.raw))
                text.append(")", dim)
        return text
