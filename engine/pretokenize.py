"""Pre-tokenization: cut text into the pieces that merges never cross.

Special tokens split the text first (longest match first where they overlap) and never
take part in merges. Each remaining piece is split by a regex: GPT-2's by default, GPT-4's
(cl100k) as ``"gpt4"``, or any pattern string.

Counting speed-up: for the two named patterns a space that follows a non-space is always a
pre-token boundary, so the text is first cut there into space-separated chunks, the chunks
are counted, and the regex runs once per *distinct* chunk instead of over the whole text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

import regex

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)
PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}

# A space preceded by a non-space starts a new pre-token under both named patterns.
_CHUNK_BOUNDARY = re.compile(r"(?<=\S)(?= )")


class PreTokenizer:
    """Splits text at special tokens, then into regex pre-tokens."""

    def __init__(self, pattern: str = "gpt2", special_tokens: Sequence[str] = ()) -> None:
        self.pattern_name = pattern if pattern in PATTERNS else None
        self.pattern = PATTERNS.get(pattern, pattern)
        self.regex = regex.compile(self.pattern)
        self.special_tokens = tuple(special_tokens)
        # Longest first, so "<|a|><|a|>" wins over "<|a|>" where both match.
        ordered = sorted(set(self.special_tokens), key=len, reverse=True)
        self.special_regex = (
            regex.compile("|".join(regex.escape(s) for s in ordered)) if ordered else None
        )
        self.chunked = self.pattern_name is not None

    def split_special(self, text: str) -> Iterator[tuple[str, bool]]:
        """Yield ``(piece, is_special)`` in order; empty ordinary pieces are skipped."""
        if self.special_regex is None:
            if text:
                yield text, False
            return
        start = 0
        for m in self.special_regex.finditer(text):
            if m.start() > start:
                yield text[start : m.start()], False
            yield m.group(), True
            start = m.end()
        if start < len(text):
            yield text[start:], False

    def pieces(self, text: str) -> list[str]:
        """The ordinary (non-special) pieces of ``text``."""
        return [p for p, special in self.split_special(text) if not special]

    def chunks(self, piece: str) -> list[str]:
        """Cut a piece at boundaries every pre-token respects (see module docstring)."""
        return _CHUNK_BOUNDARY.split(piece) if self.chunked else [piece]

    def safe_cut(self, text: str) -> int:
        """The last index at which ``text`` can be cut without changing its pre-tokens.

        Used to stream: the text before the cut is final, the rest waits for more input.
        Candidates: the end of a special token; under the named patterns also a space
        after a non-space, or a newline after a letter or digit (a token boundary in both,
        with nothing looking across it). 0 when there is none.
        """
        cut = 0
        if self.special_regex is not None:
            last = None
            for last in self.special_regex.finditer(text, max(0, len(text) - (1 << 20))):
                pass
            if last is not None:
                cut = last.end()
        if not self.chunked:
            return cut
        for i in (self._last_cut(text, " ", str.isspace, cut), self._last_cut(text, "\n", _not_alnum, cut)):
            if i > cut:
                return i
        return cut

    def _last_cut(self, text: str, char: str, bad_before: Callable[[str], bool], floor: int) -> int:
        """The last ``char`` after ``floor`` whose predecessor is not ``bad_before``, and is
        not inside a special token (0 if none)."""
        i = len(text)
        while True:
            i = text.rfind(char, floor + 1, i)
            if i < 0:
                return 0
            if not bad_before(text[i - 1]) and not self._inside_special(text, i):
                return i

    def _inside_special(self, text: str, i: int) -> bool:
        if self.special_regex is None:
            return False
        width = max(map(len, self.special_tokens))
        for m in self.special_regex.finditer(text, max(0, i - width), i + width):
            if m.start() < i < m.end():
                return True
        return False

    def pretokens(self, piece: str) -> list[str]:
        """Regex pre-tokens of one ordinary piece."""
        return self.regex.findall(piece)

    def count(self, text: str) -> Counter[bytes]:
        """Pre-token counts of ``text`` (special tokens excluded), as UTF-8 bytes."""
        chunk_counts: Counter[str] = Counter()
        for piece in self.pieces(text):
            chunk_counts.update(self.chunks(piece))
        return self.count_chunks(chunk_counts)

    def count_chunks(self, chunk_counts: Counter[str]) -> Counter[bytes]:
        """Pre-token counts from chunk counts: the regex runs once per distinct chunk."""
        counts: dict[str, int] = {}
        get = counts.get
        findall = self.regex.findall
        for chunk, n in chunk_counts.items():
            for tok in findall(chunk):
                counts[tok] = get(tok, 0) + n
        return Counter({tok.encode("utf-8"): n for tok, n in counts.items()})


def _not_alnum(ch: str) -> bool:
    return not ch.isalnum()


def merge_counts(parts: Iterable[Counter[bytes]]) -> Counter[bytes]:
    """Sum several pre-token counters (the results of parallel workers)."""
    total: Counter[bytes] = Counter()
    for part in parts:
        if len(part) > len(total):
            part, total = total, part
        for k, v in part.items():
            total[k] += v
    return total
