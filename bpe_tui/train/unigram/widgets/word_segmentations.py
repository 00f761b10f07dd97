"""A word's best segmentations on the model as it is: the best path and its runners-up.

A segmentation's log-probability is the sum of its pieces' log p; the encoder takes the
best (Viterbi). The runners-up are what the lecture means by 多个切分候选: sampling among them
is how Unigram models are trained to be robust (subword regularization). Each is shown with
how probable it is against the best: ``×0.20`` is a fifth as probable.
"""

from __future__ import annotations

import math

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import token_text
from bpe_tui.train.unigram.snapshot import UnigramSnapshot
from bpe_tui.train.unigram.widgets.round_panel import RoundPanel


def segmentation_text(pieces: tuple[str, ...], style: str = "") -> Text:
    """Pieces separated by ``|``, as the BPE screens show a word's tokens."""
    return Text("|", style="dim").join(token_text(piece.encode(), style) for piece in pieces)


class WordSegmentations(RoundPanel):
    """The chosen word's most probable segmentations, best first."""

    BORDER_TITLE = "a word's best segmentations (w)"

    def draw(self, snapshot: UnigramSnapshot) -> RenderableType:
        dim, label = self.style_of("dim"), self.style_of("label")
        chosen = snapshot.word
        text = Text()
        if chosen is None or not chosen.best:
            text.append("no word chosen: w chooses one", dim)
            return text
        text.append(chosen.word, label)
        runners = len(chosen.best) > 1
        text.append(": the best path (Viterbi)" + (" and the runners-up" if runners else ", the only one"), dim)
        room = self.content_size.height - self.lines_of(text) - 1
        if room < 1:
            return text
        best = chosen.best[0][1]
        rows: list[list[Text | str]] = [["log p", "segmentation", "vs best"]]
        for n, (pieces, score) in enumerate(chosen.best[:room]):
            rows.append([f"{score:.2f}", segmentation_text(pieces), "best" if n == 0 else f"×{math.exp(score - best):.2g}"])
        return self.above(text, columns(rows, right=frozenset({0}), styles=[label, self.style_of("best")], gap=1))
