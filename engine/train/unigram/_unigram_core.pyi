"""Types of the compiled Unigram trainer core (engine/train/unigram/_unigram_core.c)."""

from _typeshed import ReadableBuffer

class Core:
    """The Unigram trainer's state: the distinct words, the pieces, their trie and every
    word's lattice."""

    size: int
    characters_count: int
    words: int
    edges: int
    corpus_chars: int

    def __init__(self, text: ReadableBuffer, ends: ReadableBuffer, counts: ReadableBuffer, max_piece_length: int) -> None:
        """Lay out the words: ``text`` their code points (UTF-32), each ending at ``ends``
        (int64, in characters) with its count in ``counts`` (int64)."""
    def characters(self) -> str:
        """The corpus's characters by count, most frequent first: pieces 0, 1, ..."""
    def seed(self, classes: ReadableBuffer, seed_size: int, /) -> int:
        """Seed the pieces (``classes``: each character's script class, int32); returns the
        substrings seeded beside the characters."""
    def e_step(self, lo: int, hi: int, /) -> tuple[float, bytes]:
        """Forward-backward over words ``lo..hi``: their log-likelihood and each piece's
        expected count (doubles). Runs without the GIL."""
    def m_step(self, parts: list[bytes], threshold: float, /) -> int:
        """New scores from the summed expected counts; returns how many pieces it dropped
        (expected below ``threshold``; characters never)."""
    def analyze(self) -> tuple[int, bytes, bytes, bytes]:
        """What pruning needs: the corpus's tokens on the best paths, and each piece's count
        there (int64), loss (double) and kind (int8, ``rule.CANDIDATE``...)."""
    def keep(self, ids: ReadableBuffer, /) -> None:
        """Keep these pieces (int32, ascending, every character among them)."""
    def pieces(self, ids: ReadableBuffer | None = None, /) -> list[str]: ...
    def scores(self) -> bytes: ...
    def set_scores(self, scores: ReadableBuffer, /) -> None: ...
    def mark(self) -> None:
        """Remember the scores, for ``changes``."""
    def changes(self, k: int, /) -> list[tuple[str, float, float]]:
        """The ``k`` pieces whose score moved most since ``mark``: (piece, before, after)."""
