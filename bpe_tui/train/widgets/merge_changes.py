"""What the last merge changed: every pair count it moved, grouped by neighbour.

Each place ``a b`` became ``ab`` has a token before it (prev_token ``x``) and after it
(next_token ``y``): the pair ``x a`` loses a count and ``x ab`` gains one, and likewise
``b y`` and ``ab y``.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import chars_label, chars_sentence, parts_text, show_token, token_text
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.widgets.pair_table import change_text
from bpe_tui.train.widgets.panel import SnapshotPanel
from engine import PairChange
from engine.train.trainer import TIE_LIMIT


class MergeChanges(SnapshotPanel):
    """The last merge, the ties it won, and its pair-count changes (before→after)."""

    BORDER_TITLE = "last merge: what changed"

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, label, newest = self.style_of("panel--dim"), self.style_of("panel--label"), self.style_of("panel--newest")
        step = snapshot.last
        if snapshot.ran_out_unrecorded:
            return Text(
                f"no pairs left after merge {snapshot.merges_done:,}: every word is one token. "
                "Press b then n to see what the last merge changed.",
                dim,
            )
        if step is None:
            return Text(
                "no merge yet. Press n to merge the top pair: every place it occurs becomes one new token.",
                dim,
            )
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(f"#{step.index} ", label)
        head.append_text(parts_text(snapshot.pair(step.pair), sep=" + ", sep_style=dim, escape_style=dim, raw=self.raw))
        head.append(" → ", dim)
        head.append_text(token_text(step.token, newest, dim))
        head.append(f"  id {step.new_id}, count {step.count:,}", dim)
        lines = [head]
        chars = snapshot.chars(step.token)
        if chars is not None and isinstance(step.token, bytes) and not self.raw:  # a part of a character: which
            lines.append(Text(f"{show_token(step.token)} {chars_sentence(step.token, chars)}", dim, no_wrap=True, overflow="ellipsis"))
        if step.ties:
            more = "+" if len(step.ties) >= TIE_LIMIT else ""
            ties = Text(f"won a tie with {len(step.ties)}{more} at {step.count:,}: ", dim)
            for i, pair in enumerate(step.ties):
                ties.append(", " if i else "", dim)
                ties.append_text(parts_text(snapshot.pair(pair), escape_style=dim, raw=self.raw))
            lines.append(ties)
        if step.changes:
            lines.append(self._changes_table(snapshot, max(1, self.content_size.height - len(lines))))
        else:
            lines.append(Text("no neighbours: every occurrence was a whole word, no pair count changed", dim))
        return Text("\n").join(lines)

    def _changes_table(
        self, snapshot: TrainSnapshot, rows_left: int, header: tuple[str, str, str] = ("prev/next token", "pair lost", "pair gained")
    ) -> Text:
        """One row per neighbour token: the pair it lost and the pair it gained, the
        biggest changes first."""
        dim, up, down = self.style_of("panel--dim"), self.style_of("panel--up"), self.style_of("panel--down")
        step = snapshot.last
        assert step is not None
        groups: dict[tuple[str, int], list[PairChange]] = {}
        for change in step.changes:
            neighbour = change.pair[0] if change.side == "prev" else change.pair[1]
            groups.setdefault((change.side, neighbour), []).append(change)
        rows: list[list[Text | str]] = [list(header)]
        named_chars = 2 if self.content_size.width < 60 else 5  # the characters a neighbour holds part of
        # The neighbours that moved the most count first: prev before next on a draw.
        shown = sorted(groups.items(), key=lambda g: (-max(abs(c.after - c.before) for c in g[1]), g[0][0] == "next"))
        if len(shown) > rows_left - 1:
            shown = shown[: max(0, rows_left - 2)]
        for (side, neighbour), changes in shown:
            lost = [c for c in changes if c.after < c.before]
            gained = [c for c in changes if c.after > c.before]
            name = Text("prev " if side == "prev" else "next ", dim)
            token = snapshot.token(neighbour)
            name.append_text(token_text(token, escape_style=dim))
            named = "" if self.raw else chars_label(snapshot.chars(token), named_chars)  # prev \x99 ←这么: whose bytes
            name.append(f" {named}" if named else "", dim)
            rows.append([name, self._cell(snapshot, lost, down, self.raw), self._cell(snapshot, gained, up, self.raw)])
        table = columns(rows, styles=[dim])
        if len(shown) < len(groups):
            table.append(f"\n… {len(groups) - len(shown)} more neighbours", dim)
        return table

    @staticmethod
    def _cell(snapshot: TrainSnapshot, changes: list[PairChange], style: Style, raw: bool) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for change in changes:
            text.append_text(parts_text(snapshot.pair(change.pair), raw=raw))
            text.append(" " + change_text(change.before, change.after), style)
        return text
