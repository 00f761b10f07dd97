"""Which pair wins next, and why: the top of ``pair_counter`` in tie-break order."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import chars_label, parts_text, token_text
from bpe_tui.train.snapshot import ROWS, TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel


def change_text(before: int, after: int) -> str:
    return f"{before:,}→{after:,}"


class PairTable(SnapshotPanel):
    """Top pairs by count; the winner first. Pairs the last merge changed show before→after."""

    BORDER_TITLE = "next merge: pair_counter top"

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, winner, tie = self.style_of("panel--dim"), self.style_of("panel--winner"), self.style_of("panel--tie")
        up, down = self.style_of("panel--up"), self.style_of("panel--down")
        if not snapshot.top_pairs:
            return Text("no pairs left: every word is a single token", dim)
        changed = {c.pair: c for c in snapshot.last.changes} if snapshot.last else {}
        top_count = snapshot.top_pairs[0][1]
        tied = sum(1 for _, count in snapshot.top_pairs if count == top_count)
        note = self._tie_note(snapshot, tied)
        rows_left = max(1, self.content_size.height - 1 - (note is not None))

        # The characters each joined pair holds part of: fewer when the panel is narrow.
        shown = 0 if self.raw else 2 if self.content_size.width < 40 else 5
        rows: list[list[Text | str]] = [["#", "pair", "count", "last merge"]]
        styles: list[Style | None] = [dim]
        for rank, (pair, count) in enumerate(snapshot.top_pairs[:rows_left], 1):
            change = changed.get(pair)
            delta = Text()
            if change is not None:
                delta = Text(change_text(change.before, change.after), up if change.after > change.before else down)
            styles.append(winner if rank == 1 else tie if count == top_count else None)
            shown_pair = parts_text(snapshot.pair(pair), escape_style=dim, raw=self.raw)
            chars = snapshot.pair_chars(pair) if shown else None
            if chars is not None:
                shown_pair.append(" " + chars_label(chars, shown), dim)
            rows.append(
                [
                    str(rank),
                    shown_pair,
                    f"{'=' if rank > 1 and count == top_count else ''}{count:,}",
                    delta,
                ]
            )
        table = columns(rows, right=frozenset({0, 2, 3}), styles=styles)
        if note is not None:
            table.append("\n")
            table.append_text(note)
        return table

    def _tie_note(self, snapshot: TrainSnapshot, tied: int) -> Text | None:
        """Why the winner beat the pairs with the same count, by the trainer's rule: the
        greater bytes (the token that decides, compared), or the pair seen first."""
        if tied < 2:
            return None
        dim = self.style_of("panel--dim")
        (win, count), (runner, _) = snapshot.top_pairs[0], snapshot.top_pairs[1]
        w, r = snapshot.pair(win), snapshot.pair(runner)
        more = "+" if tied == len(snapshot.top_pairs) == ROWS else ""  # ties beyond the rows sampled
        note = Text(f"= tie, {snapshot.tie_break}: ", dim, no_wrap=True, overflow="ellipsis")
        if isinstance(w[0], bytes):
            side = 0 if w[0] != r[0] else 1
            note.append_text(token_text(w[side], escape_style=dim))
            note.append(" > ", dim)
            note.append_text(token_text(r[side], escape_style=dim))
            note.append(f" ({'left' if side == 0 else 'right'} token; {tied}{more} pairs at {count:,})", dim)
        else:  # the order of the rows is the order the pairs were first seen in
            note.append(f"{tied}{more} at {count:,}", dim)
        return note
