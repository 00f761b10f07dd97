"""What the last round's EM did (期望最大化): the corpus log-likelihood at each E-step, and
the pieces whose log-probability moved most.

The E-step counts each piece's expected uses over every segmentation of every word, each
weighted by its probability under the model; the M-step makes those counts the new
probabilities. The likelihood rises from one E-step to the next; pruning then lowers it.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import token_text
from bpe_tui.train.unigram.snapshot import UnigramSnapshot
from bpe_tui.train.unigram.widgets.round_panel import RoundPanel

WIDE = 40
"""A panel this wide or wider says "log p before"; narrower, "before"."""


class ScoreChanges(RoundPanel):
    """The log-likelihood through the last round's EM, and the largest moves of log p."""

    BORDER_TITLE = "EM (期望最大化): log p moves"

    def draw(self, snapshot: UnigramSnapshot) -> RenderableType:
        dim, label = self.style_of("dim"), self.style_of("label")
        view = snapshot.last
        text = Text()
        if view is None:
            text.append("No EM yet. ", label)
            text.append("Each seed's log p is log(value / sum): a character's value is its count, a substring's ", dim)
            text.append("its count × its length. n runs a round: EM re-estimates every p from expected counts, ", dim)
            text.append("then pruning removes pieces.", dim)
            return text
        if view.final:
            text.append("final step, no EM", label)
            text.append(f": log-likelihood {view.log_likelihood:,.1f} with the pieces kept. ", dim)
            text.append("The pieces split by their own best path go, then those of the lowest scores.", dim)
            return text
        text.append(f"EM ×{len(view.likelihoods)}, log-likelihood:\n", label)
        text.append(" → ".join(f"{ll:,.1f}" for ll in view.likelihoods), dim)
        if len(view.likelihoods) > 1:
            text.append(f" ({view.likelihoods[-1] - view.likelihoods[0]:+,.1f})", dim)
        room = self.content_size.height - self.lines_of(text) - 1
        if room < 1 or not view.changed:
            return text
        up, down = self.style_of("up"), self.style_of("down")
        before = "log p before" if self.content_size.width >= WIDE else "before"
        rows: list[list[Text | str]] = [["piece", before, "after", "moved"]]
        for change in view.changed[:room]:
            moved = change.after - change.before
            shown = Text(f"{moved:+.2f}", up if moved > 0 else down)
            rows.append([token_text(change.piece.encode()), f"{change.before:.2f}", f"{change.after:.2f}", shown])
        return self.above(text, columns(rows, right=frozenset({1, 2, 3}), styles=[label], gap=1))
