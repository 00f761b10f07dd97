"""Types of the compiled trainer core (engine/train/_trainer_core.c)."""

from _typeshed import ReadableBuffer

Pair = tuple[int, int]

class Core:
    """The trainer's state: laid-out words, pair records, hash table and lazy heap."""

    heap_size: int
    live_pairs: int
    stored_positions: int
    corpus_bytes: int
    words: int
    relists: int

    def __init__(
        self, words: ReadableBuffer, ends: ReadableBuffer, counts: ReadableBuffer, base_tokens: list[bytes], narrow_ids: int = 65536, /
    ) -> None:
        """Lay out a ``WordTable``'s words, or ``table()``'s (any buffers: ``ends`` and
        ``counts`` int64, one per word); more may follow (``extend``). Token ids below
        ``narrow_ids`` fit the layout's cells of a byte; the first merge past them widens the
        cells to 4 bytes."""
    def extend(self, words: ReadableBuffer, ends: ReadableBuffer, counts: ReadableBuffer, /) -> None:
        """Lay out more words after those laid out, before the pairs are counted."""
    def reserve(self, words: int, words_bytes: int, /) -> bool:
        """Make room in the layout for this many more words and bytes of words (at most)
        before they are laid out: each array is grown, and asked for huge pages, once. Only a
        hint: False if the system refuses that much, and the room is made as words come."""
    def step(self, tie_limit: int, /) -> tuple[int, int, int, list[Pair], bytes, bytes, bytes, int, int] | None:
        """One merge: (left, right, count, ties, changes, pushes, stale, heap_size,
        live_pairs), the events as packed int64 rows; None when no pair is left."""
    def run(self, n: int, floor: int = 0, budget: int = 0, /) -> list[tuple[int, int, int]]:
        """Up to n merges; the (left, right, count) of each. Pairs made with a count below
        ``floor`` (or a higher floor set before) are given up until something reads the
        pairs; a ``budget`` above 0 bounds the bytes of the pair_positions lists from here
        on, the other pairs kept as counts; the merges stay exact."""
    def redo(self, pairs: list[Pair], /) -> None:
        """Merge known pairs in order without selecting or queueing, then requeue."""
    def top_pairs(self, k: int, /) -> list[tuple[Pair, int]]: ...
    def segmentation(self, word: int, /) -> list[int]: ...
    def word(self, word: int, /) -> tuple[bytes, int]:
        """Word i's bytes and count, as given."""
    def token(self, token: int, /) -> bytes:
        """Token i's bytes."""
    def memory(self) -> dict[str, int]:
        """Bytes allocated by each structure."""
    def table(self) -> tuple[bytes, bytes, bytes]:
        """The words as given: their bytes, ends and counts (int64), to build a Core from."""
    def pair_counter(self) -> dict[Pair, int]: ...
    def pair_positions(self, left: int, right: int, limit: int, /) -> tuple[int, int, list[tuple[int, int, bool]]]:
        """(recorded, live, [(position, word, live), ...]): the pair's recorded positions,
        how many it still starts at, and the first ``limit`` in list order."""
    def cells(self, word: int, /) -> list[tuple[int, int, int, int]]:
        """Word i's (position, token, prev, next) now; -1 for a link out of the word."""
