"""Types of the compiled encoder (engine/encode/_encoder_core.c, engine/corpus/_pretokenize_core.c)."""

from collections.abc import Iterable, Sequence
from typing import overload

from typing_extensions import Buffer

CHUNK_CHARS: int
"""The characters of a long text made UTF-8 and encoded at a time."""

class MergeRanks:
    """A tokenizer's merge ranks, for merging pre-tokens."""

    def __init__(self, byte_ids: list[int], rank_of: dict[tuple[int, int], int], merged: list[int], /) -> None: ...
    def ids(self, piece: bytes, /) -> str:
        """The ids of one pre-token's bytes, each as a code point."""
    def canonical(self) -> bytes:
        """Each rank's pair of ids in rank order, little-endian 4-byte ids (0xFFFFFFFF twice
        for a rank whose pair an earlier rank already merges)."""

class Vocab:
    """A vocabulary: the bytes of each id, and the id of each entry's bytes."""

    def __init__(self, vocab: dict[int, bytes], /) -> None: ...
    def decode_bytes(self, ids: Sequence[int], /) -> bytes:
        """The bytes of ``ids`` joined; KeyError for an id that is no entry, TypeError for
        an item that is not exactly an int (a bool is not)."""
    def decode(self, ids: Sequence[int], /) -> str:
        """``decode_bytes(ids)`` read as UTF-8, invalid bytes as U+FFFD."""
    def canonical(self) -> bytes:
        """Each id's entry length (little-endian, 4 bytes; 0xFFFFFFFF for none), then the
        entries' bytes in id order."""
    def lists(self, packed: Buffer, ends: bytes, /) -> list[list[int]]:
        """The lists of ids of texts that ``Encoder.encode_ends`` packed: ``packed`` their ids
        (little-endian 4-byte ints), ``ends`` where each text's ends (native sizes)."""
    def unfilled(self, n: int, /) -> list[int]:
        """An empty list with room for ``n`` ids, put by ``fill`` and shown by ``filled``;
        nothing else may touch it before."""
    def fill(self, out: list[int], at: int, parts: list[bytes], /) -> None:
        """Put the ids of ``parts`` (little-endian arrays of 4-byte unsigned ints, as
        ``Encoder.encode_packed`` gives with width 4), one after the other, into the room of
        ``out`` from ``at`` on, a list from ``unfilled``, without the GIL: threads fill one
        list's parts together. ValueError for an id that is no entry (``out`` still empty)."""
    def filled(self, out: list[int], /) -> None:
        """The ids ``fill`` put in ``out``'s room made its items (every one must be put)."""

class SharedCache:
    """A cache of up to ``capacity`` pre-tokens' ids that the ``Encoder``s of these ranks,
    vocabulary and ``direct`` fill and read together from any threads, with no lock, across
    calls; once full it takes no more."""

    def __init__(self, ranks: MergeRanks, vocab: Vocab, direct: bool, capacity: int, /) -> None: ...
    def __len__(self) -> int:
        """The pre-tokens it holds, at most ``capacity``."""

class Encoder:
    """Encodes text under a family of compiled patterns (``pattern``: its index in
    ``engine.corpus.pretokenize.FAMILIES``), with a cache of its own of at most
    ``cache_size`` pre-tokens (emptied when full), looked in after ``shared``."""

    def __init__(
        self,
        ranks: MergeRanks,
        vocab: Vocab,
        pattern: int,
        direct: bool,
        cache_size: int,
        specials: list[tuple[str, int]],
        shared: SharedCache | None = None,
        /,
    ) -> None: ...
    def encode(self, text: str, /) -> list[int]:
        """The token ids of a text, ``specials`` (text, id; longest first) cut out first (the
        GIL is released meanwhile)."""
    def encode_packed(self, text: str, width: int, start: int = 0, end: int = ..., /) -> bytes:
        """``encode``'s ids as the bytes of a little-endian array of ``width``-byte (2 or 4)
        unsigned ints; OverflowError if an id does not fit. Of ``text[start:end]`` (``start``
        and ``end`` not negative; ``end`` by default the text's), with no slice made."""
    def cut(self, text: str, start: int, at: int, /) -> int:
        """The last place in ``text[start:at]`` where it may be cut without changing its ids,
        looked for near ``at`` by the rules of the encoder's chunks; 0 if none is found."""
    def encode_into(self, text: str, start: int, end: int, first: bool, /) -> int:
        """Keep the ids of text[start:end] after those kept (after none when first); how many."""
    def fill(self, out: list[int] | PackedIds, spans: list[tuple[int, int, int]], /) -> None:
        """Put each span (at, offset, count) of the kept ids in a list from
        ``Vocab.unfilled()`` or in ids from ``unfilled_ids()``, without the GIL."""
    @overload
    def encode_many(self, texts: Sequence[str], /) -> list[list[int]]:
        """``encode`` of each text, the GIL released once for them all."""
    @overload
    def encode_many(self, texts: Sequence[str], width: int, /) -> list[bytes]:
        """``encode_packed`` of each text (``width`` 2 or 4), the GIL released once for them all."""
    def encode_ends(self, texts: Sequence[str], /) -> tuple[PackedIds, bytes]:
        """The ids of the texts packed as 4-byte ints, one after the other (handed over, not
        copied), and where each text's end (native sizes), for ``Vocab.lists`` and
        ``join_ends``: the GIL released once for them all."""
    def encode_packed_many(self, texts: Sequence[str], width: int, eot: int = -1, ends: Sequence[bool] | None = None, /) -> bytes:
        """The ``encode_packed`` ids of the texts joined, ``eot`` (unless negative) after each
        text whose flag in ``ends`` is true (after each text when ``ends`` is None)."""
    def encode_utf8(self, data: Buffer, width: int, eot: int, /) -> bytes | None:
        """The ids of ``data``, a plain text's UTF-8 (a block cut where a pre-token always
        starts), packed as ``width``-byte little-endian ints, ``eot`` (unless negative) after
        them; None, encoding nothing, if ``data`` is not valid UTF-8."""

    def encode_jsonl(self, data: bytes, at: int, field: bytes, width: int, eot: int, /) -> tuple[bytes, int, int, int]:
        """``(ids, stop, lines, documents)``: the packed ids of the documents of the JSONL
        lines of ``data`` from byte ``at`` (each the string of its ``field``, read from the
        line's UTF-8), ``eot`` (unless negative) after each; up to the first line that only
        Python's ``json`` may read (``engine/corpus/_jsonl.h``), which starts at ``stop``;
        ``lines`` before it, blank ones too, ``documents`` of them with a text."""

class PackedIds(Buffer):
    """Token ids an encoder made, handed over with their memory: read through the buffer
    protocol as little-endian 4-byte unsigned ints (format ``"I"`` on a little-endian
    machine, ``"<I"`` elsewhere), or 2-byte ones (``"H"``) from ``join_packed``."""

    def __buffer__(self, flags: int, /) -> memoryview: ...

def join_ends(parts: Sequence[tuple[Buffer, bytes]], filled: PackedIds | None = None, /) -> tuple[PackedIds, bytes]:
    """Parts of texts' ids as ``Encoder.encode_ends`` gives them (a part may end no text, its
    ids going on into the next part's) joined: all the ids, and the texts' offsets in them
    (int64, native, from a first 0). One part of an encoder's ids is given back as it is;
    ``filled``, room from ``unfilled_ids`` that ``fill_ids`` copied the parts' ids into, as
    their ids."""

def unfilled_ids(n: int, /) -> PackedIds:
    """Room for ``n`` ids, not yet put, for threads to copy a batch's parts into together
    (``fill_ids``)."""

def join_packed(parts: Iterable[Buffer], width: int, room: int, /) -> PackedIds:
    """The buffers ``parts`` gives, ids packed ``width`` (2 or 4) bytes each, joined as they
    come, each let go once copied, into memory of their own: the last large ids' freed, if it
    holds the first part, else ``room`` bytes (a guess at them all), grown as needed; read
    through the buffer protocol as ids of that width. ValueError if they are not whole
    ids."""

def kept_room(n: int, /) -> bool:
    """Whether the memory of the last large ids freed (kept for the next) would hold ``n``
    ids."""

def fill_ids(out: PackedIds, at: int, parts: list[Buffer], /) -> None:
    """Copy the ids of ``parts`` (4 bytes each, one part after the other) into ``out`` from
    ``at`` on, without the GIL; IndexError if they do not fit."""

def unit_ends(
    texts: list[str] | tuple[str, ...], least: int, most: int, parts: int, text_chars: int, long_chars: int, /
) -> list[int] | None:
    """Where the units of ``texts`` end that ``Tokenizer._units`` makes (each unit the texts
    from the previous end to this one): texts taken until their characters, and
    ``text_chars`` a text, reach a ``parts``-th of all their characters, but no fewer than
    ``least`` nor more than ``most``; a text of more than ``long_chars`` alone in a unit. None
    where an item is not a str."""

def utf8_reaches(texts: list[str] | tuple[str, ...], least: int, /) -> bool:
    """Whether the UTF-8 of ``texts`` could reach ``least`` bytes (each str's length at the
    most bytes its kind takes a character; an ASCII one's exactly), read only as far as that;
    True where an item is not a str."""

def jsonl_field_utf8(line: Buffer, field: bytes, /) -> bytes | None:
    """The UTF-8 of the string of ``field`` in one JSONL line (its newline left off), read as
    ``Encoder.encode_jsonl`` reads a line; None for a blank line or one left to Python."""
