"""Walking through a Unigram encode one position at a time: each word's lattice and the
Viterbi best path through it, built left to right.

The engine's ``encode_steps`` gives each word's lattice (every piece of the vocabulary that
fits somewhere in it, with its log-probability), its best path and its ids. The walk lays
the Viterbi out as a student does it by hand: for each position of the word, left to right,
every piece that ends there is tried on the best score of the position where it starts;
the highest total is the best score there, and that piece its back-pointer (on a tie the
first tried: the one that starts earliest, the longest). Once the word's end is reached,
the back-pointers read from the end give the path chosen.

A move is one position, or a word's path; the walk is at ``at``: that many moves made.
Added tokens (``<unk>`` written in the text...) are cut out before any word is read: they
make no move, and join the tokens as the walk passes them.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from bpe_tui.common.token_spans import Span, SpanStyles
from engine.encode.sentencepiece_steps import SentencePieceLattices
from engine.encode.unigram import LatticeNode, UnigramTokenizer, WordLattice

LatticeModel = UnigramTokenizer | SentencePieceLattices
"""What the walk steps through: a Unigram ``tokenizer.json``, or a SentencePiece Unigram ``.model``."""


@dataclass(frozen=True, slots=True)
class Viterbi:
    """One word's best scores, position by position: ``best[j]`` is the log-probability of
    the most probable way to segment its first ``j`` characters, ``back[j]`` the index (in
    the lattice's nodes) of the last piece of that way (-1 at 0)."""

    best: tuple[float, ...]
    back: tuple[int, ...]
    ending: tuple[tuple[int, ...], ...]
    """The nodes ending at each position, in the order they are tried (by start)."""

    @classmethod
    def of(cls, lattice: WordLattice) -> Viterbi:
        n = len(lattice.word)
        ending: list[list[int]] = [[] for _ in range(n + 1)]
        for k, node in enumerate(lattice.nodes):  # nodes come by start, then length
            ending[node.end].append(k)
        best = [0.0] * (n + 1)
        back = [-1] * (n + 1)
        for end in range(1, n + 1):
            top = None
            for k in ending[end]:
                node = lattice.nodes[k]
                total = best[node.start] + node.log_prob
                if top is None or total > top:
                    top, back[end] = total, k
            best[end] = top if top is not None else float("-inf")
        return cls(tuple(best), tuple(back), tuple(tuple(e) for e in ending))

    def total(self, lattice: WordLattice, k: int) -> float:
        """What node ``k`` makes of the best score where it starts."""
        node = lattice.nodes[k]
        return self.best[node.start] + node.log_prob


@dataclass(frozen=True, slots=True)
class Move:
    """One position of a word filled (``end``), or the word's path read back (``end`` one
    past its length)."""

    word: int
    """Index into ``LatticeWalk.lattices``."""
    end: int


@dataclass(frozen=True, slots=True)
class Focus:
    """The move shown at a point of the walk."""

    index: int
    """Index into ``LatticeWalk.moves``; -1 before the first move of the word."""
    word: int
    lattice: WordLattice
    viterbi: Viterbi
    reached: int
    """Positions of the word whose best score is known (0: only its start)."""

    @property
    def done(self) -> bool:
        """Whether the word's path has been read back."""
        return self.reached > len(self.lattice.word)

    @property
    def filled(self) -> int:
        """The last position with its best score known."""
        return min(self.reached, len(self.lattice.word))


class LatticeWalk:
    """The lattices of one Unigram encode and their positions across the whole text."""

    def __init__(self, tokenizer: LatticeModel, text: str) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self.lattices = tokenizer.encode_steps(text)
        self.viterbi: list[Viterbi | None] = []
        self.moves: list[Move] = []
        for wi, lattice in enumerate(self.lattices):
            if lattice.special:
                self.viterbi.append(None)
                continue
            self.viterbi.append(Viterbi.of(lattice))
            self.moves += [Move(wi, end) for end in range(1, len(lattice.word) + 2)]
        self.total = len(self.moves)
        self._word_ends = [k + 1 for k, move in enumerate(self.moves) if move.end > len(self.lattices[move.word].word)]
        self.ids = [i for lattice in self.lattices for i in lattice.ids]
        """The final token ids (what the model's ``encode`` returns)."""
        self.words = sum(not lattice.special for lattice in self.lattices)
        self.specials = len(self.lattices) - self.words

    def path(self, word: int) -> list[int]:
        """Word ``word``'s best path as the walk's back-pointers give it (nodes' indices)."""
        viterbi, lattice = self.viterbi[word], self.lattices[word]
        assert viterbi is not None  # an added token has no path
        out = []
        at = len(lattice.word)
        while at > 0:
            out.append(viterbi.back[at])
            at = lattice.nodes[out[-1]].start
        return out[::-1]

    # -- where the walk is ------------------------------------------------------------------

    def focus(self, at: int) -> Focus | None:
        """The move shown once ``at`` moves are made: the last one made, or at the start the
        first word with none of it made. None when the text has no word."""
        if not self.moves:
            return None
        if at <= 0:
            word, reached, index = self.moves[0].word, 0, -1
        else:
            index = min(at, self.total) - 1
            word, reached = self.moves[index].word, self.moves[index].end
        viterbi = self.viterbi[word]
        assert viterbi is not None  # moves are words'
        return Focus(index, word, self.lattices[word], viterbi, reached)

    def next_word(self, at: int) -> int:
        """Where the word under way is done (its path read back); the next word's, at one's end."""
        k = bisect_right(self._word_ends, at)
        return self._word_ends[k] if k < len(self._word_ends) else self.total

    def words_done(self, at: int) -> int:
        """Words whose path has been read back once ``at`` moves are made."""
        return bisect_right(self._word_ends, at)

    # -- the tokens so far ------------------------------------------------------------------

    def tokens(self, at: int) -> list[tuple[int, int]]:
        """``(id, lattice index)`` of each token made once ``at`` moves are made: the words
        (and added tokens) before the one shown, and its own once its path is read back."""
        focus = self.focus(at)
        if focus is None or at >= self.total:
            return [(i, wi) for wi, lattice in enumerate(self.lattices) for i in lattice.ids]
        upto = focus.word + (1 if focus.done else 0)
        return [(i, wi) for wi, lattice in enumerate(self.lattices[:upto]) for i in lattice.ids]


def step_spans(walk: LatticeWalk, at: int, styles: SpanStyles) -> tuple[list[Span], int | None]:
    """Spans of the tokens made once ``at`` moves are made, and the index of the first span
    of the word shown (None when it has none yet): its tokens, once its path is read back,
    are green; added tokens and ``<unk>`` are gold."""
    focus = walk.focus(at)
    word = focus.word if focus is not None and at < walk.total else -1
    tokens = walk.tokens(at)
    token, unk = walk.tokenizer.token, walk.tokenizer.unk_id
    spans: list[Span] = []
    first = None
    for n, (i, wi) in enumerate(tokens):
        if walk.lattices[wi].special or i == unk:
            style = styles.special
        elif wi == word:
            style = styles.merge
            first = n if first is None else first
        else:
            style = styles.odd if n % 2 else styles.even
        spans.append(Span(token(i).encode("utf-8"), i, style))
    return spans, first


def node_label(node: LatticeNode) -> str:
    """A lattice node as ``start–end``: the characters it covers, 0-based, end excluded."""
    return f"{node.start}–{node.end}"
