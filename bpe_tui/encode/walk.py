"""Walking through an encode one merge at a time, over the whole text.

The engine's ``encode_steps`` gives each pre-token's rounds of the merge loop. Laid end to
end, pre-token by pre-token, the rounds that merge something form one sequence of
``total`` merges; step ``k`` is the state after the first ``k`` of them: earlier pre-tokens
are fully merged, the one being worked on is part-way, later ones are still raw bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from bpe_tui.common.token_spans import Span, SpanStyles
from engine import EncodeStep, PreTokenTrace, Tokenizer
from engine.encode.sentencepiece_steps import SentencePieceMerges

MergeModel = Tokenizer | SentencePieceMerges
"""What the walk steps through: a byte-level BPE tokenizer, or a SentencePiece BPE ``.model``."""


@dataclass(frozen=True, slots=True)
class Focus:
    """The pre-token being worked on at a step, and the round of its merge loop shown."""

    index: int
    """Index into ``EncodeWalk.traces``."""
    trace: PreTokenTrace
    step: EncodeStep


class EncodeWalk:
    """The traces of one encode and the global merge order across them."""

    def __init__(self, tokenizer: MergeModel, text: str) -> None:
        self.text = text
        self.traces = tokenizer.encode_steps(text)
        self._merges = [(ti, si) for ti, trace in enumerate(self.traces) for si, step in enumerate(trace.steps) if step.chosen is not None]
        self.total = len(self._merges)
        """Merges the whole text needs."""
        self.ids = [i for trace in self.traces for i in trace.ids]
        """The final token ids (what the model's ``encode`` returns)."""

    def start_of(self, pretoken: int) -> int:
        """The step just before the first merge of pre-token ``pretoken`` (or of the next one
        that has a merge): earlier pre-tokens merged, it still in bytes."""
        return next((k for k, (ti, _) in enumerate(self._merges) if ti >= pretoken), self.total)

    def parts(self, k: int) -> list[list[int]]:
        """Each pre-token's token ids after the first ``k`` merges."""
        if k >= self.total:
            return [trace.ids for trace in self.traces]
        current, si = self._merges[k]
        out = []
        for ti, trace in enumerate(self.traces):
            if ti < current or trace.special:
                out.append(trace.ids)
            elif ti == current:
                out.append(trace.steps[si].parts)
            else:
                out.append(trace.steps[0].parts)
        return out

    def focus(self, k: int) -> Focus | None:
        """The round about to run at step ``k``.

        At the end it is the last pre-token that merged, on its final round where no pair
        is left in the merges; with no merges at all, the first pre-token with a pair.
        """
        if k < self.total:
            ti, si = self._merges[k]
        elif self._merges:
            ti = self._merges[-1][0]
            si = len(self.traces[ti].steps) - 1
        else:
            ti = next((i for i, t in enumerate(self.traces) if t.steps and t.steps[0].ranks), -1)
            if ti < 0:
                return None
            si = 0
        trace = self.traces[ti]
        return Focus(ti, trace, trace.steps[si])


def step_spans(tokenizer: MergeModel, walk: EncodeWalk, k: int, styles: SpanStyles) -> tuple[list[Span], int | None]:
    """Spans after the first ``k`` merges, and the index of the first span of the pre-token
    that merges next (None at the end)."""
    focus = walk.focus(k)
    merging = focus.step.chosen if focus and k < walk.total else None
    spans: list[Span] = []
    first = None
    for ti, (trace, parts) in enumerate(zip(walk.traces, walk.parts(k), strict=True)):
        in_focus = focus is not None and ti == focus.index
        if in_focus and merging is not None:
            first = len(spans)
        for pi, i in enumerate(parts):
            if trace.special:
                style = styles.special
            elif merging is not None and in_focus and pi in (merging, merging + 1):
                style = styles.merge
            else:
                style = styles.odd if len(spans) % 2 else styles.even
            if in_focus:
                style += styles.focus
            spans.append(Span(tokenizer.vocab[i], i, style))
    return spans, first
