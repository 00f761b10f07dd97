"""Which characters of the corpus a token holds part of, counted once from the pre-tokens.

A byte-level token can hold part of a multi-byte UTF-8 character: ``\\xe4\\xba`` is the first
two of the three bytes of 了, 事, 二, 于, 五 and of every other character that starts with
them. Shown on its own (a pair to merge, a new vocabulary entry), such a token says nothing
to a reader; ``CharacterCounts`` counts the corpus's multi-byte characters once, from the
counted pre-tokens, so the token can name the characters its incomplete ends most often
belong to.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.corpus.word_table import WordTable

SHOWN = 5
"""Characters kept for each incomplete end, the most frequent first."""


def utf8_length(lead: int) -> int:
    """Bytes of the character a lead byte starts (0: not a lead byte: a continuation byte or
    one UTF-8 never uses)."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


def is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


@dataclass(frozen=True, slots=True)
class PartialChars:
    """The characters a token's incomplete ends belong to, the most frequent first.

    A token is ``opening`` (continuation bytes that finish a character begun before it),
    then whole characters, then ``closing`` (the first bytes of a character it does not
    finish); either may be empty.
    """

    opening: bytes
    ends: tuple[str, ...]
    """Characters whose last bytes are ``opening`` (or, for a token of continuation bytes
    only, that hold them after their first byte)."""
    closing: bytes
    begins: tuple[str, ...]
    """Characters whose first bytes are ``closing``."""


def split_partial(token: bytes) -> tuple[bytes, bytes]:
    """``(opening, closing)``: the continuation bytes a token starts with, and the start of
    a character it ends without finishing (``b""`` where it has none)."""
    start = 0
    while start < len(token) and is_continuation(token[start]):
        start += 1
    lead = next((i for i in range(len(token) - 1, start - 1, -1) if not is_continuation(token[i])), None)
    closing = b""
    if lead is not None and len(token) - lead < utf8_length(token[lead]):
        closing = token[lead:]
    return token[:start], closing


class CharacterCounts:
    """How often each multi-byte character occurs in the corpus, and an index from each
    incomplete piece of one (its first bytes, its last bytes, its inner bytes) to the
    characters holding it, the most frequent first."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = {ch: n for ch, n in counts.items() if len(ch) == 1 and ord(ch) >= 0x80}
        starts: defaultdict[bytes, list[str]] = defaultdict(list)
        ends: defaultdict[bytes, list[str]] = defaultdict(list)
        inner: defaultdict[bytes, list[str]] = defaultdict(list)
        for ch in sorted(self.counts, key=lambda c: (-self.counts[c], c)):  # ties by code point: deterministic
            encoded = ch.encode("utf-8")
            n = len(encoded)
            for k in range(1, n):
                for index, piece in ((starts, encoded[:k]), (ends, encoded[k:])):
                    if len(index[piece]) < SHOWN:
                        index[piece].append(ch)
                for j in range(k + 1, n + 1):
                    if len(inner[encoded[k:j]]) < SHOWN:
                        inner[encoded[k:j]].append(ch)
        self._starts, self._ends, self._inner = dict(starts), dict(ends), dict(inner)

    @classmethod
    def from_words(cls, words: Iterable[tuple[bytes, int]]) -> CharacterCounts:
        """Count the characters of pre-tokens and their counts (a ``WordTable``'s items).

        Words are grouped by count and each group decoded and counted at once, in C: a
        pre-token of Chinese text seldom repeats, so most groups are large.
        """
        groups: defaultdict[int, list[bytes]] = defaultdict(list)
        for word, count in words:
            if not word.isascii():
                groups[count].append(word)
        counts: Counter[str] = Counter()
        for count, group in groups.items():
            for ch, n in Counter(b"".join(group).decode("utf-8", "replace")).items():
                if ord(ch) >= 0x80:
                    counts[ch] += n * count
        return cls(counts)

    @classmethod
    def from_table(cls, table: WordTable) -> CharacterCounts:
        return cls.from_words(table.items())

    def around(self, token: bytes) -> PartialChars | None:
        """The characters ``token``'s incomplete ends belong to (None: it holds whole
        characters only, or is one)."""
        opening, closing = split_partial(token)
        if not opening and not closing:
            return None
        if opening == token:  # continuation bytes only: the end or the middle of a character
            ends = self._inner.get(opening, [])
        else:
            ends = self._ends.get(opening, []) if opening else []
        begins = self._starts.get(closing, []) if closing else []
        return PartialChars(opening, tuple(ends), closing, tuple(begins))
