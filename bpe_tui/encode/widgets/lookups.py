"""The longest match at one position of a word, as the lecture's 最长匹配 reads it.

At the word's start the candidates are its prefixes; further on, ``##`` + the rest's
prefixes (``##`` marks a piece that continues a word). They are looked up longest first,
each ✗ not in the vocabulary or ✓ found; the first found is taken, and the next search starts
where it ends. A rest that no piece starts, not even its first character, makes the whole
word ``[UNK]``; so does a word longer than the model's limit, without a lookup.

Where the search is and what came of it stay in view above the candidates; a long list of
candidates scrolls to its newest.
"""

from __future__ import annotations

from functools import partial

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from bpe_tui.encode.longest_match import Focus
from engine.encode.wordpiece import WordPieceTokenizer


def piece_text(token: str) -> Text:
    """A piece or a word as it is looked up, in bold."""
    return Text(token, style="bold")


class Lookups(Vertical):
    """The candidates looked up at the position the walk is at, and the piece taken."""

    BORDER_TITLE = "longest match"

    COMPONENT_CLASSES = {"lookups--found", "lookups--missing", "lookups--next", "lookups--unknown"}

    def __init__(self, tokenizer: WordPieceTokenizer, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tokenizer = tokenizer

    def compose(self) -> ComposeResult:
        yield Static(id="search")
        with VerticalScroll(id="candidates-scroll", can_focus=False):
            yield Static(id="candidates")

    def show(self, focus: Focus | None) -> None:
        head = self.query_one("#search", Static)
        table_view = self.query_one("#candidates", Static)
        if focus is None:
            head.update(Text("No word to match: the text is only whitespace and added tokens.", style="italic"))
            table_view.update("")
            return
        self.border_title = f"longest match: “{focus.trace.word}”"
        head.update(Group(*self._where(focus), *self._outcome(focus)))
        table_view.update(self._candidates(focus))
        scroll = self.query_one("#candidates-scroll", VerticalScroll)
        self.call_after_refresh(scroll.scroll_end, animate=False, immediate=True)

    # -- the parts ---------------------------------------------------------------------------

    def _rest(self, focus: Focus) -> str:
        """What the search at the focus position looks up: the rest of the word, ``##`` first
        past its start."""
        move, word = focus.move, focus.trace.word
        return (self.tokenizer.prefix if move.start else "") + word[move.start :]

    def _where(self, focus: Focus) -> list[Text]:
        move, word = focus.move, focus.trace.word
        if len(word) > self.tokenizer.max_input_chars_per_word:
            return [Text(f"the word has {len(word)} characters, more than {self.tokenizer.max_input_chars_per_word} (the model's limit)")]
        if not move.start:
            return [Text.assemble("at the word's start: ", piece_text(self._rest(focus)))]
        before = " ".join(m.match.token for m in focus.made if m.match is not None and m is not move) or word[: move.start]
        return [Text.assemble(f"at character {move.start + 1}, after ", (before, "dim"), ": ", piece_text(self._rest(focus)))]

    def _outcome(self, focus: Focus) -> list[Text]:
        move, trace, vocab = focus.move, focus.trace, self.tokenizer.vocab
        get = partial(self.get_component_rich_style, partial=True)
        if not focus.finished and not move.lookups:
            return [Text(f"next: too long to look up, the whole word is one {self.tokenizer.unk_token} (n)")]
        if not focus.finished:
            return [Text.assemble("longest first: ", ("l looks up one, n to the match", "dim"))]
        if move.match is not None:
            match = move.match
            taken = Text.assemble("✓ took ", piece_text(match.token), f" (id {match.id}), the longest found")
            taken.stylize(get("lookups--found"), 0, 1)
            if match.end < len(trace.word):
                following = Text.assemble("next search: ", piece_text(self.tokenizer.prefix + trace.word[match.end :]))
            else:
                pieces = " ".join(vocab[i] for i in trace.ids)
                following = Text.assemble("the word is done: ", piece_text(pieces))
            return [taken, following]
        return [self._why_unknown(focus)]

    def _why_unknown(self, focus: Focus) -> Text:
        """Why the word is one ``[UNK]``, in plain words."""
        tokenizer, trace, move = self.tokenizer, focus.trace, focus.move
        unk = f"{tokenizer.unk_token} (id {tokenizer.unk_id})"
        if len(trace.word) > tokenizer.max_input_chars_per_word:
            why = Text(f"too long to match: {trace.word[:12]}… is one {unk}, without a single lookup")
        elif not move.lookups:
            why = Text(f"no piece starts with {tokenizer.prefix}: nothing can continue a word, and {trace.word} is one {unk}")
        else:
            rest, first = self._rest(focus), move.lookups[-1].piece
            alone = "" if first == rest else Text.assemble(", not even ", piece_text(first), " alone")
            why = Text.assemble("✗ no piece of the vocabulary starts ", piece_text(rest), alone, f": {trace.word} is one {unk}")
        dropped = [m.match.token for m in focus.made if m.match is not None]
        if dropped:
            verb = "are" if len(dropped) > 1 else "is"
            why.append_text(Text.assemble(", and ", piece_text(" ".join(dropped)), f", taken before, {verb} dropped."))
        else:
            why.append(".")
        why.stylize(self.get_component_rich_style("lookups--unknown", partial=True))
        return why

    def _candidates(self, focus: Focus) -> RenderableType:
        move = focus.move
        if not move.lookups:
            return ""
        get = partial(self.get_component_rich_style, partial=True)
        table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1), show_header=False)
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True)
        for n, lookup in enumerate(move.lookups[: focus.done]):
            if lookup.found and move.match is not None:  # the last lookup of a match
                table.add_row("✓", piece_text(lookup.piece), f"id {move.match.id}  ◀ taken", style=get("lookups--found"))
            else:
                dead_end = focus.finished and move.match is None and n == len(move.lookups) - 1
                said = "not in the vocabulary" + ("  ◀ dead end" if dead_end else "")
                table.add_row("✗", Text(lookup.piece), said, style=get("lookups--missing"))
        if not focus.finished:
            table.add_row("?", piece_text(move.lookups[focus.done].piece), "next lookup", style=get("lookups--next"))
        first, rest = move.lookups[0].piece, self._rest(focus)
        if len(first) == len(rest):
            return table
        longest = len(first) - (len(self.tokenizer.prefix) if move.start else 0)
        return Group(Text(f"(longer than {longest} characters: no such entry)", style="dim"), table)
