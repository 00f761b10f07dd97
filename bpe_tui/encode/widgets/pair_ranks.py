"""One round of the merge loop on the pre-token being worked on.

As in the lecture's printout for `` tech``: the parts, every adjacent pair with its merge
rank (its number in the merge list) or "not in merges", and the lowest rank marked as the
pair that merges now. When no pair is in the merges, the pre-token is done. The parts and
the merge stay in view above the pairs; a long pre-token's pairs scroll, centred on the
lowest.
"""

from __future__ import annotations

from functools import partial

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from bpe_tui.common.tokens import pieces_text, raw_bytes, text_pieces, token_text
from bpe_tui.encode.walk import Focus, MergeModel


class PairRanks(Vertical):
    """The focus pre-token's parts and each adjacent pair's merge rank."""

    COMPONENT_CLASSES = {
        "pair-ranks--even",
        "pair-ranks--odd",
        "pair-ranks--lowest",
        "pair-ranks--unranked",
    }

    def __init__(self, tokenizer: MergeModel, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tokenizer = tokenizer

    def compose(self) -> ComposeResult:
        yield Static(id="round")
        with VerticalScroll(id="pairs-scroll", can_focus=False):
            yield Static(id="pairs-table")

    def show_round(self, focus: Focus | None) -> None:
        head = self.query_one("#round", Static)
        table_view = self.query_one("#pairs-table", Static)
        scroll = self.query_one("#pairs-scroll", VerticalScroll)
        if focus is None:
            head.update(Text("No pre-token has two bytes to merge.", style="italic"))
            table_view.update("")
            return
        vocab = self.tokenizer.vocab
        get = partial(self.get_component_rich_style, partial=True)
        step = focus.step
        # The parts read within their pre-token: a part of a character names it (《₁ 《₂ 《₃).
        shown = [pieces_text(pieces) for pieces in text_pieces([vocab[i] for i in step.parts], raw_bytes(self))]

        parts = Text("parts  ")
        for n, part in enumerate(shown):
            if n:
                parts.append(" ")
            part.stylize(get("pair-ranks--odd" if n % 2 else "pair-ranks--even"))
            parts.append_text(part)

        pairs = [Text.assemble(shown[n], " + ", shown[n + 1]) for n in range(len(step.ranks))]
        table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1))
        table.add_column("pair", no_wrap=True, min_width=max((p.cell_len for p in pairs), default=4))
        table.add_column("merge rank", justify="right", no_wrap=True, min_width=len("not in merges"))
        table.add_column("", no_wrap=True)
        for n, (pair, rank) in enumerate(zip(pairs, step.ranks, strict=True)):
            if n == step.chosen:
                table.add_row(pair, str(rank), "◀ lowest", style=get("pair-ranks--lowest"))
            elif rank is None:
                table.add_row(pair, "not in merges", "", style=get("pair-ranks--unranked"))
            else:
                table.add_row(pair, str(rank), "")

        word = token_text(focus.trace.text.encode())
        if step.chosen is not None:
            merged = step.after[step.chosen]
            outcome = Text.assemble("merges now: ", pairs[step.chosen], " → ", token_text(vocab[merged]), f" (id {merged})")
        elif step.ranks:
            outcome = Text.assemble("No pair is in the merges: ", word, " is done.")
        else:
            outcome = Text.assemble(word, " is done: a single token.")
        head.update(Group(parts, outcome))
        table_view.update(table if step.ranks else "")
        if step.chosen is None:
            scroll.scroll_home(animate=False, immediate=True)
        else:  # row 0 is the table header
            scroll.scroll_to_region(Region(0, 1 + step.chosen, 1, 1), center=True, animate=False, immediate=True)
