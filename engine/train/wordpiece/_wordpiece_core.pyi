"""Types of the compiled WordPiece trainer core (engine/train/wordpiece/_wordpiece_core.c)."""

from _typeshed import ReadableBuffer

Pair = tuple[int, int]
Step = tuple[
    int, int, int, int, int, int, list[Pair], bytes, bytes, bytes, int, int, list[tuple[int, int, int]], tuple[Pair, int, int, int] | None
]

def first_words(text: ReadableBuffer, ends: ReadableBuffer, /) -> list[int]:
    """The words (their indices) in which a symbol is first seen: their alphabet is the
    corpus's. The arguments are ``Core``'s first two."""

class Core:
    """The WordPiece trainer's state: laid-out words, symbol and pair counts, hash tables and
    lazy score heap."""

    heap_size: int
    live_pairs: int
    stored_positions: int
    tokens_in_corpus: int
    corpus_chars: int

    def __init__(
        self, text: ReadableBuffer, ends: ReadableBuffer, counts: ReadableBuffer, base_tokens: list[bytes], vocab_size: int, /
    ) -> None:
        """Lay out the words (``text`` their UTF-8 one after another, each ending at ``ends``,
        in characters, with its count in ``counts``: int64 buffers), numbering their symbols
        as ``base_tokens`` (the ids before any merge) do; merges stop at ``vocab_size`` tokens."""
    def step(self, tie_limit: int, /) -> Step | None:
        """One merge: (left, right, new, count, count(a), count(b), ties, changes, pushes,
        stale, heap_size, live_pairs, symbol_changes, bpe), the events as packed int64 rows,
        ``symbol_changes`` as (symbol, before, after), ``bpe`` as ((left, right), count,
        count(left), count(right)) before the merge; None when no pair is left."""
    def run(self, n: int, /) -> bytes:
        """Up to n merges, fewer when the vocabulary is full or no pair is left: packed int64
        rows (left, right, new, count)."""
    def top_pairs(self, k: int, /) -> list[tuple[Pair, int]]: ...
    def bpe_choice(self) -> tuple[Pair, int] | None: ...
    def segmentation(self, word: int, /) -> list[int]: ...
    def symbol_count(self, token: int, /) -> int: ...
    def pair_counter(self) -> dict[Pair, int]: ...
