"""The text as a Unigram model reads it: its words, each with ``▁`` where the space before it
was, marked at one point of the walk: the words whose path is chosen, the word being read
(its characters up to the position reached apart from the rest), the words still ahead, and
the added tokens cut out first.

Of a long text only the words around the one being read are drawn: drawing every word at
every step would keep the keys waiting.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from bpe_tui.common.tokens import token_text
from bpe_tui.encode.lattice import LatticeWalk

AROUND = 200
"""Words shown on either side of the one being read."""


class TextWords(Static):
    """The text's words at one point of the walk."""

    COMPONENT_CLASSES = {
        "text-words--ahead-even",
        "text-words--ahead-odd",
        "text-words--done-even",
        "text-words--done-odd",
        "text-words--special",
        "text-words--reached",
        "text-words--rest",
    }

    def show(self, walk: LatticeWalk, at: int) -> None:
        def get(name: str) -> Style:
            return self.get_component_rich_style(f"text-words--{name}", partial=True)

        focus = walk.focus(at)
        current = focus.word if focus is not None and at < walk.total else len(walk.lattices)
        lo, hi = max(0, current - AROUND), min(len(walk.lattices), current + AROUND + 1)
        text = Text("… " if lo else "")
        for wi in range(lo, hi):
            lattice = walk.lattices[wi]
            if lattice.special:
                text.append_text(token_text(lattice.word.encode(), get("special")))
            elif wi == current and focus is not None:
                reached = focus.filled
                text.append_text(token_text(lattice.word[:reached].encode(), get("reached")))
                text.append_text(token_text(lattice.word[reached:].encode(), get("rest")))
            else:
                parity = "even" if wi % 2 == 0 else "odd"
                style = get(f"done-{parity}") if wi < current else get(f"ahead-{parity}")
                text.append_text(token_text(lattice.word.encode(), style))
        if hi < len(walk.lattices):
            text.append(" …")
        self.update(text if walk.lattices else Text("(no text)", style="italic"))
