"""What the last WordPiece merge was worth, and what it changed.

Its score ``count(ab) / (count(a) * count(b))`` with the three counts it was chosen on; the
symbol counts the merge moved (``a`` and ``b`` lose what ``ab`` gains, so the scores of every
pair holding them move too); the pair BPE's rule would have merged instead, with its lower
score; then, as for BPE, the pair counts around each occurrence (``MergeChanges``).
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.tokens import parts_text, token_text
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.widgets.merge_changes import MergeChanges
from bpe_tui.train.widgets.pair_scores import WIDE, score_sum, short_score
from bpe_tui.train.widgets.pair_table import change_text
from engine.train.trainer import TIE_LIMIT
from engine.train.wordpiece.events import WordPieceStep


def flow(segments: list[Text], width: int, indent: str = "  ") -> list[Text]:
    """``segments`` on as few lines as fit in ``width``, broken only between segments."""
    lines = [Text(no_wrap=True, overflow="ellipsis")]
    for segment in segments:
        line = lines[-1]
        if line.cell_len and line.cell_len + segment.cell_len > width:
            line = Text(indent, no_wrap=True, overflow="ellipsis")
            lines.append(line)
            segment = segment[len(segment.plain) - len(segment.plain.lstrip()) :]
        line.append_text(segment)
    return lines


class ScoredMerge(MergeChanges):
    """The last merge: its three counts and score, the symbol counts it changed, the BPE
    pair it beat, the ties it won, and the pair counts it changed."""

    BORDER_TITLE = "last merge: score, changes"

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        step = snapshot.last
        if not isinstance(step, WordPieceStep):  # no merge yet, or none left: said as for BPE
            return super().draw(snapshot)
        dim, label, newest = self.style_of("panel--dim"), self.style_of("panel--label"), self.style_of("panel--newest")
        width = self.content_size.width
        wide = width >= WIDE
        reused = snapshot.likelihood is not None and snapshot.likelihood.reused
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(f"#{step.index} ", label)
        head.append_text(parts_text(snapshot.pair(step.pair), sep=" + ", sep_style=dim, escape_style=dim))
        head.append(" → ", dim)
        head.append_text(token_text(step.token, newest, dim))
        head.append(f"  id {step.new_id}" + (", already a token" if reused else ""), dim)
        lines = [head]

        said = Text("score = count(ab)/(count(a)·count(b)) = " if wide else "score ", dim)
        said.append(score_sum(step.count, step.left_count, step.right_count))
        exact = f"{step.score.numerator:,}/{step.score.denominator:,}"
        lines += flow([said, Text(f" = {exact}" if wide else ""), Text(f" ≈ {short_score(step.score)}", label)], width)

        counts = [Text("symbol counts:" if wide else "symbols", dim)]
        for change in step.symbol_changes:
            moved = Text(" ")
            moved.append_text(token_text(snapshot.token(change.symbol), escape_style=dim))
            style = self.style_of("panel--up" if change.after > change.before else "panel--down")
            moved.append(" " + change_text(change.before, change.after), style)
            counts.append(moved)
        lines += flow(counts, width)

        if step.bpe_pair is not None and step.bpe_score is not None:
            lines += flow(self._bpe_segments(snapshot, step, wide), width)

        if step.ties:
            more = "+" if len(step.ties) >= TIE_LIMIT else ""
            ties = Text(f"won a tie with {len(step.ties)}{more} at {short_score(step.score)}: ", dim)
            for i, pair in enumerate(step.ties):
                ties.append(", " if i else "", dim)
                ties.append_text(parts_text(snapshot.pair(pair), escape_style=dim))
            lines.append(ties)
        if step.changes:
            header = ("prev/next token", "pair lost", "pair gained") if wide else ("around it", "lost", "gained")
            lines.append(self._changes_table(snapshot, max(1, self.content_size.height - len(lines)), header))
        else:
            lines.append(Text("no neighbours: every occurrence was a whole word, no pair count changed", dim))
        return Text("\n").join(lines)

    def _bpe_segments(self, snapshot: TrainSnapshot, step: WordPieceStep, wide: bool) -> list[Text]:
        """The pair BPE's rule would have merged at this moment, and its lower score."""
        dim = self.style_of("panel--dim")
        assert step.bpe_pair is not None and step.bpe_score is not None
        if step.bpe_pair == step.pair:
            return [Text("BPE's rule (the most frequent pair) would merge this pair too" if wide else "BPE would merge it too", dim)]
        beat = Text("beat the pair BPE's rule (most frequent) would merge: " if wide else "beat BPE's ", dim)
        beat.append_text(parts_text(snapshot.pair(step.bpe_pair), escape_style=dim))
        if not wide:  # its counts are in the BPE row of the pair table
            return [beat, Text(f" ≈ {short_score(step.bpe_score)}", dim)]
        counts = score_sum(step.bpe_count, step.bpe_left_count, step.bpe_right_count)
        return [beat, Text(f" {counts} ≈ {short_score(step.bpe_score)}, lower: its parts are common", dim)]
