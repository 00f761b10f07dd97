"""Words the user follows (``w``, ``--follow``): each one's tokens now, and the merges that
changed it.

A word is cut by the pre-tokenizer first (``‖`` between its pre-tokens); each pre-token is
then merged with the merges so far, as the encoder would. The merges that changed it are
listed newest last, each pair named within the word (``#53 孙₁+孙₂``), so stepping shows the
word being built character by character, and stepping back undoes it.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from bpe_tui.common.tokens import parts_text, pieces_text, text_pieces
from bpe_tui.train.snapshot import TrainSnapshot
from bpe_tui.train.widgets.panel import SnapshotPanel
from engine.train.follow import FollowedPiece, FollowedWord, WordChange

PRE_TOKEN_CUT = " ‖ "


class FollowedWords(SnapshotPanel):
    """Each followed word: how often the corpus has it, its segmentation, its merges."""

    BORDER_TITLE = "followed words (w)"

    def fit(self, words: int) -> None:
        """Three lines a word, inside the border: set before the words arrive (``--follow``)
        and whenever their number changes, so the screen is laid out once for them."""
        self.styles.height = 3 * words + 2

    def show(self, snapshot: TrainSnapshot) -> None:
        super().show(snapshot)
        if self.styles.height is None or self.styles.height.value != 3 * len(snapshot.followed) + 2:
            self.fit(len(snapshot.followed))

    def draw(self, snapshot: TrainSnapshot) -> RenderableType:
        lines: list[Text] = []
        for word in snapshot.followed:
            lines += self._word(snapshot, word)
        return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)

    def _word(self, snapshot: TrainSnapshot, word: FollowedWord) -> list[Text]:
        dim, label, newest = self.style_of("panel--dim"), self.style_of("panel--label"), self.style_of("panel--newest")
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(word.word, label)
        head.append(f"  {self._occurs(word)}", dim)
        tokens = Text("  ", no_wrap=True, overflow="ellipsis")
        count = sum(len(piece.parts) for piece in word.pieces)
        tokens.append(f"{count} token{'' if count == 1 else 's'}: ", dim)
        marked = snapshot.last.token if snapshot.last else None
        for i, piece in enumerate(word.pieces):
            if i:
                tokens.append(PRE_TOKEN_CUT, dim)
            tokens.append_text(parts_text(list(piece.parts), escape_style=dim, marked=marked, marked_style=newest, raw=self.raw))
        return [head, tokens, self._changes(word)]

    @staticmethod
    def _occurs(word: FollowedWord) -> str:
        """How often the corpus has the word, as one pre-token or as several."""
        if not word.occurs:
            return "not in the corpus: cut by the merges so far, as the encoder would"
        if len(word.pieces) == 1:
            (piece,) = word.pieces
            return f"×{piece.count:,} as a pre-token, ×{piece.inside:,} inside longer ones"
        each = ", ".join(f"×{p.count:,}" for p in word.pieces)
        return f"{len(word.pieces)} pre-tokens, each seen alone {each}"

    def _changes(self, word: FollowedWord) -> Text:
        """The merges that changed the word, as many of the newest as fit, newest last."""
        dim = self.style_of("panel--dim")
        changes = word.changes
        if not changes:
            return Text("  no merge has changed it yet", dim)
        room = max(1, self.content_size.width - 4)
        items: list[Text] = []
        width = 0
        for piece, change in reversed(changes):
            item = self._change(piece, change)
            if items and width + item.cell_len + 3 > room:
                break
            items.append(item)
            width += item.cell_len + 3
        text = Text("  " if len(items) == len(changes) else "  … ", dim, no_wrap=True, overflow="ellipsis")
        text.append_text(Text(" · ", dim).join(reversed(items)))
        return text

    def _change(self, piece: FollowedPiece, change: WordChange) -> Text:
        """``#k a+b``, the pair named within the word's pre-token, where it first joined."""
        dim = self.style_of("panel--dim")
        end = change.at + len(change.left) + len(change.right)
        parts = [piece.text[: change.at], change.left, change.right, piece.text[end:]]
        left, right = text_pieces(parts, self.raw)[1:3]
        text = Text(f"#{change.merge} ", dim)
        text.append_text(pieces_text(left, escape_style=dim))
        text.append("+", dim)
        text.append_text(pieces_text(right, escape_style=dim))
        return text
