"""Walking through a WordPiece encode one lookup at a time: 最长匹配, the longest match first.

The engine's ``encode_steps`` gives each word its matches, each with the candidates looked up
at its position, longest first (``WordPieceMatch.tried``), and an ``[UNK]`` word the lookups
at the rest that no piece starts (``dead_end``). Laid end to end, word by word, they are one
sequence of ``lookups`` lookups, cut into ``total`` moves: a move is one match (the
candidates tried, down to the one found) or one word found ``[UNK]`` (its dead end; a word
too long is a move of no lookup, counted as one). The walk is at ``at``: that many lookups
made. ``n`` and ``p`` stop at the ends of moves, ``l`` at every lookup.

Added tokens (``[CLS]``, ``[SEP]``...) are cut out of the text before any word is matched:
they make no move, and join the tokens as the walk passes them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from bpe_tui.common.token_spans import Span, SpanStyles
from engine.encode.wordpiece import WordPieceMatch, WordPieceTokenizer, WordPieceTry, WordTrace


@dataclass(frozen=True, slots=True)
class Move:
    """One match, or one word found ``[UNK]``."""

    word: int
    """Index into ``LongestMatchWalk.traces``."""
    start: int
    """Where its search starts in the word, in characters."""
    lookups: tuple[WordPieceTry, ...]
    """The candidates looked up, longest first: down to the one found, or all not found."""
    match: WordPieceMatch | None
    """The piece taken; None: the word is ``[UNK]``."""
    first: int
    """The number of lookups the walk has made before this move."""

    @property
    def size(self) -> int:
        """Lookups it counts for: at least one (a word too long makes none)."""
        return max(1, len(self.lookups))

    @property
    def last(self) -> int:
        """Where the walk is once this move is made."""
        return self.first + self.size


@dataclass(frozen=True, slots=True)
class Focus:
    """The move shown at a point of the walk, and how far its word has got."""

    index: int
    """Index into ``LongestMatchWalk.moves``."""
    move: Move
    trace: WordTrace
    """The word it is in."""
    done: int
    """Its lookups made so far."""
    made: tuple[Move, ...]
    """The moves of its word made so far (itself among them once finished)."""
    word_done: bool
    """Whether its word has all its tokens: its last move is made."""

    @property
    def finished(self) -> bool:
        return self.done >= self.move.size

    @property
    def covered(self) -> int:
        """Characters of the word the pieces taken so far cover."""
        taken = [m.match for m in self.made if m.match is not None]
        return taken[-1].end if taken else 0

    @property
    def unknown(self) -> bool:
        """Whether the word has been found ``[UNK]``."""
        return bool(self.made) and self.made[-1].match is None


class LongestMatchWalk:
    """The traces of one WordPiece encode and its lookups across the whole text."""

    def __init__(self, tokenizer: WordPieceTokenizer, text: str) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self.traces = tokenizer.encode_steps(text)
        self.moves: list[Move] = []
        at = 0
        for wi, trace in enumerate(self.traces):
            if trace.special:
                continue
            for match in trace.matches:
                self.moves.append(Move(wi, match.start, match.tried, match, at))
                at = self.moves[-1].last
            if trace.unknown_reason is not None:
                start = trace.matches[-1].end if trace.matches else 0
                self.moves.append(Move(wi, start, trace.dead_end, None, at))
                at = self.moves[-1].last
        self.lookups = at
        """Lookups the whole text takes (a word too long counts as one)."""
        self.total = len(self.moves)
        """Moves the whole text takes: matches, and words found ``[UNK]``."""
        self._stops = [move.last for move in self.moves]
        self.ids = [i for trace in self.traces for i in trace.ids]
        """The final token ids (what ``WordPieceTokenizer.encode`` returns)."""
        self.trace_ends = [trace.end for trace in self.traces]
        """Where each trace ends in the text, in order (to find the words in a part of it)."""
        self.words = sum(not trace.special for trace in self.traces)
        self.specials = len(self.traces) - self.words

    # -- where the walk is ------------------------------------------------------------------

    def moves_done(self, at: int) -> int:
        """Moves finished once ``at`` lookups are made."""
        return bisect_right(self._stops, at)

    def next_stop(self, at: int) -> int:
        """The end of the move under way (or of the next one, at an end)."""
        k = bisect_right(self._stops, at)
        return self._stops[k] if k < len(self._stops) else self.lookups

    def previous_stop(self, at: int) -> int:
        """The end of the move before the one shown (0: the start)."""
        k = bisect_left(self._stops, at)
        return self._stops[k - 1] if k > 0 else 0

    def focus(self, at: int) -> Focus | None:
        """The move shown once ``at`` lookups are made: the one just finished at the end of
        a move, else the one under way (at the start: the first, none of it made). None when
        the text has no word."""
        if not self.moves:
            return None
        if at <= 0:
            index, done = 0, 0
        else:
            index = min(bisect_left(self._stops, at), self.total - 1)
            done = at - self.moves[index].first
        move = self.moves[index]
        finished = done >= move.size
        first = index
        while first and self.moves[first - 1].word == move.word:
            first -= 1
        made = tuple(self.moves[first : index + finished])
        following = self.moves[index + 1] if index + 1 < self.total else None
        word_done = finished and (following is None or following.word != move.word)
        return Focus(index, move, self.traces[move.word], done, made, word_done)

    # -- the tokens so far ------------------------------------------------------------------

    def tokens(self, at: int) -> list[tuple[int, int]]:
        """``(id, trace index)`` of each token made once ``at`` lookups are made: the words
        before the one shown, with the added tokens among them; that word's pieces taken so
        far (its ``[UNK]`` once found); at the end, everything."""
        focus = self.focus(at)
        if focus is None or at >= self.lookups:
            return [(i, wi) for wi, trace in enumerate(self.traces) for i in trace.ids]
        word = focus.move.word
        out = [(i, wi) for wi, trace in enumerate(self.traces[:word]) for i in trace.ids]
        if focus.unknown:
            return [*out, (self.tokenizer.unk_id, word)]
        return out + [(m.match.id, word) for m in focus.made if m.match is not None]

    def characters_read(self, at: int) -> int:
        """Characters of the text up to where the pieces made once ``at`` lookups are made end."""
        focus = self.focus(at)
        if focus is None or at >= self.lookups:
            return len(self.text)
        trace = focus.trace
        if focus.word_done:
            return trace.end
        if trace.end - trace.start != len(trace.word):  # lowercasing moved its characters: up to its start
            return trace.start
        return trace.start + focus.covered

    def unknown_words(self, at: int) -> int:
        """Words found ``[UNK]`` once ``at`` lookups are made."""
        return sum(m.match is None for m in self.moves[: self.moves_done(at)])


def step_spans(walk: LongestMatchWalk, at: int, styles: SpanStyles) -> tuple[list[Span], int | None]:
    """Spans of the tokens made once ``at`` lookups are made, and the index of the first
    span of the word shown (None when it has none yet). Its tokens are underlined, the piece
    just taken green; added tokens and ``[UNK]`` are gold."""
    focus = walk.focus(at)
    word = focus.move.word if focus is not None else -1
    tokens = walk.tokens(at)
    shown = [n for n, (_, wi) in enumerate(tokens) if wi == word]
    taken = shown[-1] if shown and focus is not None and focus.finished and focus.move.match is not None else None
    vocab, unk = walk.tokenizer.vocab, walk.tokenizer.unk_id
    spans: list[Span] = []
    for n, (i, wi) in enumerate(tokens):
        if walk.traces[wi].special or i == unk:
            style = styles.special
        elif n == taken:
            style = styles.merge
        else:
            style = styles.odd if n % 2 else styles.even
        spans.append(Span(vocab[i].encode(), i, style + styles.focus if wi == word else style))
    return spans, shown[0] if shown else None
