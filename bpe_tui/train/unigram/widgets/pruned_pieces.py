"""What the last round removed (剪枝): the vocabulary before and after, why the pieces went,
and those whose removal cost the most, with that cost.

A piece's loss is what the corpus log-likelihood would lose without it: its uses on the
best paths re-segmented the second-best way (SentencePiece's estimate; the engine's
``RemovedPiece.loss`` is per token, shown here times the round's tokens). Pruning keeps the
pieces whose loss is largest; the costliest removed are the closest calls.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import token_text
from bpe_tui.train.unigram.snapshot import RoundView, UnigramSnapshot
from bpe_tui.train.unigram.widgets.round_panel import RoundPanel

REASONS = {"pruned": "by loss", "unused": "on no best path", "split": "split by their own best path", "final": "by score"}
"""How the panel names each reason a piece went, in this order."""


def loss_of(view: RoundView, loss: float) -> float:
    """A removed piece's loss in the corpus's log-likelihood (the engine's is per token)."""
    return loss * view.tokens


class PrunedPieces(RoundPanel):
    """The pieces the last round removed, the costliest first."""

    BORDER_TITLE = "pruned (剪枝)"

    def draw(self, snapshot: UnigramSnapshot) -> RenderableType:
        dim, label = self.style_of("dim"), self.style_of("label")
        view = snapshot.last
        text = Text()
        if view is None:
            text.append(f"{snapshot.seeded:,} seed pieces", label)
            text.append(f": the {snapshot.characters:,} characters, always kept, and the frequent substrings. ", dim)
            text.append(f"Each round keeps about 75% of the pieces, down to {snapshot.desired:,}; ", dim)
            specials = f"{snapshot.specials} special token{'s' * (snapshot.specials != 1)}"
            text.append(f"a final step then keeps the best {snapshot.vocab_size - snapshot.specials:,} scores (+ {specials}).", dim)
            return text
        text.append(f"{view.size_before:,} → {view.size_after:,} pieces", label)
        if view.final:
            text.append("  final: the best scores kept", dim)
        else:
            text.append(f"  {view.size_after / max(1, view.size_before):.0%} kept", dim)
            if view.dropped:  # pruning's own share is of what EM left, not of the round's start
                left = view.size_before - view.dropped
                text.append(f" (pruning: {view.size_after / max(1, left):.0%} of the {left:,} EM left)", dim)
        removed = [f"{view.dropped:,} by EM"] if view.dropped else []
        removed += [f"{view.reasons[reason]:,} {name}" for reason, name in REASONS.items() if view.reasons.get(reason)]
        text.append("\nremoved: " + (", ".join(removed) or "none"), dim)
        room = self.content_size.height - self.lines_of(text) - 1
        if room < 1 or not view.costliest:
            return text
        rows: list[list[Text | str]] = [["removed, costliest first", "loss", "uses"]]
        for piece in view.costliest[:room]:
            rows.append([token_text(piece.piece.encode()), f"{loss_of(view, piece.loss):,.2f}", f"{piece.uses:,}"])
        return self.above(text, columns(rows, right=frozenset({1, 2}), styles=[label], gap=1))
