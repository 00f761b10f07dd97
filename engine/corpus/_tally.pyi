"""Types of the compiled pre-token tally (engine/corpus/_tally.c)."""

from array import array
from collections.abc import Iterable, Sequence

Buffer = bytes | bytearray | memoryview | array[int]

class Tally:
    """Pre-token counts under a family of patterns (its index in
    ``engine.corpus.pretokenize.FAMILIES``), or -1: each text added is one pre-token."""

    def __init__(self, family: int) -> None: ...
    def add(self, text: str, /) -> None:
        """Count the pre-tokens of ``text`` (the GIL is released for a long one)."""
    def add_all(self, texts: Iterable[str], /) -> None:
        """Count the pre-tokens of each text."""
    def add_jsonl(self, data: Buffer, at: int, field: bytes, specials: tuple[bytes, ...], /) -> tuple[int, int]:
        """Count the texts (the string ``field``) of the JSONL lines of ``data`` from byte ``at``,
        up to the first line left to the caller: one that is not a JSON object holding the
        field once as a string (or that C does not read: see ``engine/corpus/_jsonl.h``), or
        whose text holds one of the ``specials``. ``(where that line starts, or len(data);
        how many lines came before it)``."""
    def add_utf8(self, data: Buffer, specials: tuple[bytes, ...], /) -> bool:
        """Count the pre-tokens of a text given as its UTF-8 bytes, the ``specials`` cut out
        as ``PreTokenizer.split_special`` cuts them; False, counting nothing, if ``data`` is
        not valid UTF-8 (as Python's strict decoder has it)."""
    def table(self, sort: bool = False, /) -> tuple[bytes, bytes, bytes]:
        """``(words, ends, counts)``: the distinct pre-tokens' bytes one after another, in the
        order first seen or sorted by bytes; where each ends and each one's count, as native
        int64."""
    def gather(self, words: Buffer, ends: Buffer, counts: Buffer, /) -> None:
        """Append a table as ``table()`` gives it (ends and counts native int64, in any buffer)
        as it is, not looked up: a word held already is held twice until ``write_sorted`` sums
        them. ValueError if its ends run backwards, past its words or stop short of them. The
        tally counts no more after: only ``write_sorted`` reads it."""
    def route(self, fds: Sequence[int | None], own: int, /) -> None:
        """Keep only the pre-tokens of part ``own`` of ``len(fds)``, by the low 32 bits of each
        one's hash (the same in every tally), and send every other one, those counted already
        first, to the file descriptor of its part (``fds[own]`` is not used), as tables one
        after another (see ``engine/corpus/_outbox.h``), until ``send``."""
    def send(self) -> None:
        """Send what ``route`` has not sent yet, and keep every pre-token again; OSError for a
        write that failed since ``route``."""
    def counts(self) -> dict[bytes, int]:
        """The counts, in the order first seen."""
    def write_sorted(self, fd: int, /) -> tuple[int, int]:
        """Write what ``table(True)`` gives to the file descriptor ``fd`` at its offset (the
        ends, the counts, then the words) without making it, each word once however often
        ``gather`` added it; ``(words, bytes of words)`` written. The tally counts no more
        after."""
    @property
    def words_bytes(self) -> int:
        """The distinct pre-tokens' bytes, one after another."""
    @property
    def seen(self) -> int:
        """The pre-tokens counted, each as often as it was seen (those sent elsewhere too)."""
    def __len__(self) -> int: ...
    @property
    def nbytes(self) -> int:
        """The memory the tally holds: its words, ends, counts and index."""

def merge_tables(tables: Sequence[tuple[Buffer, Buffer, Buffer]], /) -> tuple[bytes, bytes, bytes]:
    """The sum of tables sorted by bytes, each ``(words, ends, counts)`` as ``table(True)``
    gives them (ends and counts native int64, in any buffer), as one sorted table;
    ValueError for a table not sorted or whose ends run past its words."""

def concat_tables(tables: Sequence[tuple[Buffer, Buffer, Buffer]], /) -> tuple[bytes, bytes, bytes]:
    """Tables, each ``(words, ends, counts)``, one after another as one; ValueError for one
    whose ends do not end at the end of its words."""

def count_lines(data: Buffer, /) -> int:
    """The newlines (``b"\\n"``) in a buffer, as ``bytes(data).count(b"\\n")`` without the
    copy, several times as fast; the GIL is released while counting."""

class TableMerge:
    """``merge_tables(tables)``, taken a part at a time; the tables' buffers are held until it
    is let go."""

    def __init__(self, tables: Sequence[tuple[Buffer, Buffer, Buffer]], /) -> None: ...
    def take(self, max_bytes: int, max_words: int, /) -> tuple[bytes, bytes, bytes]:
        """The next ``(words, ends, counts)`` of the merge: as many words as fit in both (at
        least one while any is left, none once the merge is done)."""
    def read(self) -> list[tuple[int, int]]:
        """How far the merge has read into each table: ``(bytes of its words, words)``."""
