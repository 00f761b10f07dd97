"""The text being encoded, each word's span marked: the words the matching has covered, the
word it is in (its pieces taken so far apart from the rest), the words still ahead, and the
added tokens cut out before any word was matched.

The words alternate between two backgrounds so that two words with nothing between them
(``don`` ``'`` ``t``) still show apart. The text scrolls to keep the word shown in view; of
a long text, only the part around that word is drawn.
"""

from __future__ import annotations

from bisect import bisect_left

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from bpe_tui.encode.longest_match import LongestMatchWalk

AROUND = 2000
"""Characters of a long text shown on either side of the word being matched: drawing all
of a long text at every step would keep the keys waiting."""


class WordSpans(VerticalScroll, can_focus=False):
    """The text with its words marked at one point of the walk."""

    COMPONENT_CLASSES = {
        "word-spans--ahead-even",
        "word-spans--ahead-odd",
        "word-spans--done-even",
        "word-spans--done-odd",
        "word-spans--unknown",
        "word-spans--special",
        "word-spans--taken",
        "word-spans--rest",
    }

    def compose(self) -> ComposeResult:
        yield Static(id="words-text")

    def show(self, walk: LongestMatchWalk, at: int) -> None:
        def get(name: str) -> Style:
            return self.get_component_rich_style(f"word-spans--{name}", partial=True)

        focus = walk.focus(at)
        word = focus.move.word if focus is not None else len(walk.traces)
        start, end = _window(walk.text, focus.trace.start if focus else 0, focus.trace.end if focus else 0)
        text = Text(("… " if start else "") + walk.text[start:end] + (" …" if end < len(walk.text) else ""))
        shift = 2 if start else 0  # where the window's first character is in ``text``
        first = bisect_left(walk.trace_ends, start + 1)
        n = sum(not trace.special for trace in walk.traces[:first])  # words before the window: they alternate
        for wi in range(first, len(walk.traces)):
            trace = walk.traces[wi]
            if trace.start >= end:
                break
            a, b = max(trace.start, start) - start + shift, min(trace.end, end) - start + shift
            if trace.special:
                text.stylize(get("special"), a, b)
                continue
            n += 1
            if wi == word and focus is not None:
                if focus.unknown:
                    text.stylize(get("unknown") + get("rest"), a, b)
                else:  # the pieces taken, then the rest (the whole word where lowercasing moved its characters)
                    split = min(a + focus.covered, b) if trace.end - trace.start == len(trace.word) else a
                    text.stylize(get("taken"), a, split)
                    text.stylize(get("rest"), split, b)
            elif wi < word:
                text.stylize(get("unknown" if trace.unknown_reason else "done-odd" if n % 2 else "done-even"), a, b)
            else:
                text.stylize(get("ahead-odd" if n % 2 else "ahead-even"), a, b)
        self.query_one("#words-text", Static).update(text)
        if focus is not None:
            self.call_after_refresh(self._scroll_to_word, text.plain[: focus.trace.end - start + shift])

    def _scroll_to_word(self, before: str) -> None:
        """Scroll the line where ``before`` ends into view (text wraps greedily, so the lines
        before it are those of ``before`` alone)."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return
        row = len(Text(before).wrap(self.app.console, width)) - 1
        self.scroll_to_region(Region(0, max(row, 0), 1, 1), animate=False, immediate=True)


def _window(text: str, start: int, end: int) -> tuple[int, int]:
    """The part of ``text`` shown around ``text[start:end]``: about ``AROUND`` characters on
    either side, cut at whitespace."""
    a, b = max(0, start - AROUND), min(len(text), end + AROUND)
    if a:
        cut = min((i for i in (text.find(" ", a, start), text.find("\n", a, start)) if i >= 0), default=a - 1)
        a = cut + 1
    if b < len(text):
        cut = max(text.rfind(" ", end, b), text.rfind("\n", end, b))
        b = cut if cut >= 0 else b
    return a, b
