"""Which pair wins next, and why: the top of ``pair_counter`` in tie-break order.

Opened by ``bpe-tui check`` (``mark``), at the merge before a student's first differing one
it marks the rule's pair and the student's (a row of its own when it is not among the top),
and says why the rule's wins: the greater count, or on a tie the greater bytes.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text

from bpe_tui.common.columns import columns
from bpe_tui.common.tokens import chars_label, parts_text, token_text
from bpe_tui.train.snapshot import ROWS, TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel
from engine.check.merges import MergeDifference
from engine.check.why import Choice
from engine.train.events import Token

RULE, YOURS = "◀ rule", "◀ yours"
"""The marks of the rule's pair and the student's (``bpe-tui check``)."""


def change_text(before: int, after: int) -> str:
    return f"{before:,}→{after:,}"


class PairTable(SnapshotPanel):
    """Top pairs by count; the winner first. Pairs the last merge changed show before→after."""

    BORDER_TITLE = "next merge: pair_counter top"
    COMPONENT_CLASSES = SnapshotPanel.COMPONENT_CLASSES | {"panel--yours"}

    mark: MergeDifference | None = None
    """A student's first differing merge (``bpe-tui check``): marked at the merge before it."""

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        dim, winner, tie = self.style_of("panel--dim"), self.style_of("panel--winner"), self.style_of("panel--tie")
        up, down = self.style_of("panel--up"), self.style_of("panel--down")
        if not snapshot.top_pairs:
            return Text("no pairs left: every word is a single token", dim)
        changed = {c.pair: c for c in snapshot.last.changes} if snapshot.last else {}
        top_count = snapshot.top_pairs[0][1]
        tied = sum(1 for _, count in snapshot.top_pairs if count == top_count)
        choice = self._marked(snapshot)
        yours: list[Token] | None = list(choice.yours) if choice is not None else None
        note = self._tie_note(snapshot, tied, yours if choice is not None and choice.tie else None)
        if choice is not None and not choice.tie:
            note = self._count_note(choice)
        note_lines = 0 if note is None else note.plain.count("\n") + 1
        rows_left = max(1, self.content_size.height - 1 - note_lines - (choice is not None))

        # The characters each joined pair holds part of: fewer when the panel is narrow.
        shown = 0 if self.raw else 2 if self.content_size.width < 40 else 5
        # Marked, a narrow panel gives the marks the last merge's column.
        deltas = choice is None or self.content_size.width >= 44
        rows: list[list[Text | str]] = [["#", "pair", "count", *(["last merge"] if deltas else []), *([""] if choice else [])]]
        styles: list[Style | None] = [dim]
        marked = False
        for rank, (pair, count) in enumerate(snapshot.top_pairs[:rows_left], 1):
            change = changed.get(pair)
            delta = Text()
            if change is not None:
                delta = Text(change_text(change.before, change.after), up if change.after > change.before else down)
            is_yours = yours is not None and snapshot.pair(pair) == yours
            marked = marked or is_yours
            styles.append(winner if rank == 1 else self.style_of("panel--yours") if is_yours else tie if count == top_count else None)
            shown_pair = parts_text(snapshot.pair(pair), escape_style=dim, raw=self.raw)
            chars = snapshot.pair_chars(pair) if shown else None
            if chars is not None:
                shown_pair.append(" " + chars_label(chars, shown), dim)
            rows.append(
                [
                    str(rank),
                    shown_pair,
                    f"{'=' if rank > 1 and count == top_count else ''}{count:,}",
                    *([delta] if deltas else []),
                    *([RULE if rank == 1 else YOURS if is_yours else ""] if choice else []),
                ]
            )
        if choice is not None and yours is not None and not marked:  # not among the top: a row of its own
            styles.append(self.style_of("panel--yours"))
            rank_text = "–" if choice.your_rank is None else str(choice.your_rank)
            rows.append(
                [rank_text, parts_text(yours, escape_style=dim, raw=self.raw), f"{choice.your_count:,}", *([""] if deltas else []), YOURS]
            )
        table = columns(rows, right=frozenset({0, 2, 3} if deltas else {0, 2}), styles=styles)
        if note is not None:
            table.append("\n")
            table.append_text(note)
        return table

    def _marked(self, snapshot: TrainSnapshot) -> Choice | None:
        """The student's choice, when this is the merge just before theirs differs and the
        rule's pair is on top."""
        mark = self.mark
        if mark is None or mark.choice is None or snapshot.merges_done != mark.index - 1 or snapshot.finished:
            return None
        if snapshot.pair(snapshot.top_pairs[0][0]) != list(mark.choice.rule):
            return None
        return mark.choice

    def _count_note(self, choice: Choice) -> Text:
        """Why the rule's pair beat the student's, which has fewer occurrences."""
        dim = self.style_of("panel--dim")
        if choice.your_count == 0:
            said = f"{YOURS} stands nowhere now: the rule's occurs {choice.rule_count:,} times"
        else:
            said = f"{YOURS}: {choice.your_count:,} < {choice.rule_count:,}: the most frequent pair merges first"
        return Text(said, dim, no_wrap=True, overflow="ellipsis")

    def _tie_note(self, snapshot: TrainSnapshot, tied: int, against: list[Token] | None = None) -> Text | None:
        """Why the winner beat the pairs with the same count (``against``: the student's pair,
        else the runner-up), by the trainer's rule: the greater bytes (the token that decides,
        compared), or the pair seen first."""
        if tied < 2:
            return None
        dim = self.style_of("panel--dim")
        (win, count), (runner, _) = snapshot.top_pairs[0], snapshot.top_pairs[1]
        w, r = snapshot.pair(win), against or snapshot.pair(runner)
        more = "+" if tied == len(snapshot.top_pairs) == ROWS else ""  # ties beyond the rows sampled
        gap = "\n" if against else " "  # against the student's pair, two lines: it must be read whole
        note = Text(f"= tie, {snapshot.tie_break}:{gap}", dim, no_wrap=True, overflow="ellipsis")
        if isinstance(w[0], bytes):
            side = 0 if w[0] != r[0] else 1
            note.append_text(token_text(w[side], escape_style=dim))
            note.append(" > ", dim)
            note.append_text(token_text(r[side], escape_style=dim))
            side_name = "left" if side == 0 else "right"
            said = f": the {side_name} tokens decide" if against else f" ({side_name} token; {tied}{more} pairs at {count:,})"
            note.append(said, dim)
        else:  # the order of the rows is the order the pairs were first seen in
            note.append(f"{tied}{more} at {count:,}", dim)
        return note
