"""Which pair WordPiece merges next, and why: the pairs by score, beside BPE's choice.

WordPiece's score is ``count(ab) / (count(a) * count(b))``, the likelihood gain of the
merge (似然): high when the parts are rarely seen apart, however rare the pair. BPE's rule,
the largest ``count(ab)``, would merge a pair of common parts instead; its row under the
table shows its larger counts and its lower score.
"""

from __future__ import annotations

from fractions import Fraction

from rich.cells import cell_len
from rich.console import RenderableType
from rich.style import Style
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import parts_text
from bpe_tui.train.likelihood import Likelihood
from bpe_tui.train.snapshot import ROWS, Pair, TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel

WIDE = 56
"""From this many columns the headers name the counts in full: count(ab), count(a), count(b)."""


def _width(cell: Text | str) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)


def short_score(score: Fraction) -> str:
    """A score in three significant digits, as ``8.33e-3``: scores run from 1 down to
    millionths, and the exponent sorts them at a glance."""
    mantissa, exponent = f"{float(score):.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def score_sum(count: int, left: int, right: int) -> str:
    """The score's three counts as the sum the rule does: ``1,357/(2,100·4,000)``."""
    return f"{count:,}/({left:,}·{right:,})"


class PairScores(SnapshotPanel):
    """The pairs in the trainer's order (score, then count(ab), then bytes), the winner
    first; then the pair BPE's rule would merge now, in the same columns."""

    BORDER_TITLE = "next merge: best score ab/(a·b)"

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, winner, tie = self.style_of("panel--dim"), self.style_of("panel--winner"), self.style_of("panel--tie")
        likelihood = snapshot.likelihood
        if not snapshot.top_pairs or likelihood is None:
            return Text("no pairs left: every word is a single token", dim)
        top_score = likelihood.score(*snapshot.top_pairs[0])
        tied = sum(1 for pair, count in snapshot.top_pairs if likelihood.score(pair, count) == top_score)
        note = self._tie_note(snapshot, likelihood, tied, top_score)
        bpe = likelihood.bpe_choice
        width, height = self.content_size.width, self.content_size.height
        # Rows: the header, the pairs, BPE's row and a line saying what it is, a tie note.
        said = bpe is not None and height >= 6 + (note is not None)
        rows_left = max(1, height - 1 - (bpe is not None) - said - (note is not None))
        wide = width >= WIDE
        header: list[Text | str] = ["#", "pair", "score", *(("count(ab)", "count(a)", "count(b)") if wide else ("ab", "a", "b"))]
        rows: list[list[Text | str]] = [header]
        styles: list[Style | None] = [dim]
        for rank, (pair, count) in enumerate(snapshot.top_pairs[:rows_left], 1):
            score = likelihood.score(pair, count)
            equal = rank > 1 and score == top_score
            rows.append([str(rank), *self._cells(snapshot, likelihood, pair, count, "=" if equal else "")])
            styles.append(winner if rank == 1 else tie if equal else None)
        if bpe is not None:
            rows.append([Text("BPE", self.style_of("panel--label")), *self._cells(snapshot, likelihood, *bpe)])
            styles.append(None)
        gap = 2 if wide else 1
        self._fit_pairs(rows, width, gap)
        table = columns(rows, right=frozenset({0, 2, 3, 4, 5}), styles=styles, gap=gap)
        if said and bpe is not None:
            table.append("\n")
            table.append_text(self._bpe_note(snapshot, bpe, wide))
        if note is not None:
            table.append("\n")
            table.append_text(note)
        return table

    def _cells(self, snapshot: TrainSnapshot, likelihood: Likelihood, pair: Pair, count: int, mark: str = "") -> list[Text | str]:
        """A pair's cells: the pair, its score, count(ab), count(a), count(b); a count the
        last merge changed in the colour of its change."""
        up, down = self.style_of("panel--up"), self.style_of("panel--down")
        last = snapshot.last
        moved = {c.pair: c.after - c.before for c in last.changes} if last is not None else {}
        symbols_moved = {c.symbol: c.after - c.before for c in getattr(last, "symbol_changes", ())}

        def number(value: int, change: int) -> Text:
            return Text(f"{value:,}", up if change > 0 else down if change < 0 else "")

        a, b = pair
        return [
            parts_text(snapshot.pair(pair), escape_style=self.style_of("panel--dim")),
            mark + short_score(likelihood.score(pair, count)),
            number(count, moved.get(pair, 0)),
            number(likelihood.count(a), symbols_moved.get(a, 0)),
            number(likelihood.count(b), symbols_moved.get(b, 0)),
        ]

    @staticmethod
    def _fit_pairs(rows: list[list[Text | str]], width: int, gap: int) -> None:
        """Shorten long pairs (…) so that the numbers always show whole."""
        others = [max(_width(row[i]) for row in rows) for i in (0, 2, 3, 4, 5)]
        room = max(4, width - sum(others) - gap * 5)
        for row in rows[1:]:
            pair = row[1]
            if isinstance(pair, Text) and pair.cell_len > room:
                pair.truncate(room, overflow="ellipsis")

    def _bpe_note(self, snapshot: TrainSnapshot, bpe: tuple[Pair, int], wide: bool) -> Text:
        """What the BPE row is: the most frequent pair, which WordPiece merges later, or now."""
        dim = self.style_of("panel--dim")
        if bpe[0] == snapshot.top_pairs[0][0]:
            same = "BPE would merge the most frequent pair: here it is the same pair" if wide else "BPE: most frequent; here the same pair"
            return Text(same, dim, no_wrap=True, overflow="ellipsis")
        if wide:
            return Text("BPE would merge the most frequent pair: its parts are common, so its score is lower", dim)
        return Text("BPE: most frequent, lower score", dim, no_wrap=True, overflow="ellipsis")

    def _tie_note(self, snapshot: TrainSnapshot, likelihood: Likelihood, tied: int, score: Fraction) -> Text | None:
        """Why the winner beat the pairs of the same score: the larger count(ab), else the
        greater bytes."""
        if tied < 2:
            return None
        dim = self.style_of("panel--dim")
        (_, count), (_, runner_count) = snapshot.top_pairs[0], snapshot.top_pairs[1]
        more = "+" if tied == len(snapshot.top_pairs) == ROWS else ""  # ties beyond the rows sampled
        why = "the larger count(ab) wins" if count > runner_count else "the greater bytes win"
        return Text(f"= {tied}{more} tied: {why}", dim, no_wrap=True, overflow="ellipsis")
