"""Pre-tokenization: cut text into the pieces that merges never cross.

Special tokens split the text first (longest match first where they overlap) and never
take part in merges. Each remaining piece is split by a regex: GPT-2's by default, or one
named in ``PATTERNS``, or any pattern string; or by a sequence of stages, as Hugging Face
files describe them, with added tokens matched as HF matches them and an optional NFC
normalizer (``engine.corpus.stages``).

The patterns of GPT-2, GPT-4 (cl100k), GPT-4o (o200k), Llama-3 and Qwen2 are matched in C
(``engine/corpus/_pretokenize_core.c``), chosen by the pattern string itself:
``KNOWN_PATTERNS`` maps every way tiktoken and those models' files write them to its family,
so a pattern given by name, by its text, or read from a file runs the same compiled scanner.
Any other pattern runs through ``regex``.

Counting (``tally``) runs in C too: a ``Tally`` (``engine/corpus/_tally.c``) scans each ordinary
piece with the compiled pre-tokenizer and counts its pre-tokens as bytes, with no Python object
per pre-token. Under another pattern the pieces are split by ``regex`` here and each
pre-token is counted there.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

import regex

from engine.corpus._pretokenize import pretokens as _compiled_pretokens
from engine.corpus._tally import Tally
from engine.corpus.stages import AddedToken, AddedTokens, PatternSpec, Split, Stage, Stages, simplest

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
PATTERNS = {
    "gpt2": GPT2_PATTERN,
    "gpt4": GPT4_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "llama3": LLAMA3_PATTERN,
    "qwen2": QWEN2_PATTERN,
}
r"""The patterns known by name. ``gpt4`` is GPT-4's as tiktoken wrote it until 2024 (and
minbpe still does); ``cl100k`` is tiktoken's string today, which adds ``\s++$``: whitespace
that ends a text stays one pre-token even across a newline (``"a\n "`` is ``"a"``, ``"\n "``
rather than ``"a"``, ``"\n"``, ``" "``); the two split everything else alike. ``llama3`` is Llama-3's
``tokenizer.json`` regex (the same splits as ``gpt4``), ``qwen2`` Qwen2's (one digit a
pre-token)."""

FAMILIES = ("gpt2", "gpt4", "cl100k", "o200k", "qwen2")
"""The families the compiled pre-tokenizer matches, by their number there (``PATTERN_*`` in
``engine/corpus/_pretokenize_core.h``)."""

KNOWN_PATTERNS = {
    GPT2_PATTERN: "gpt2",
    # tiktoken's r50k/p50k/gpt2 string; GPT-2's own (encoder.py, and Hugging Face's ByteLevel);
    # the same with bracketed classes, as tiktoken's comment quotes it.
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""": "gpt2",
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": "gpt2",
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}]+| ?[\p{N}]+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": "gpt2",
    GPT4_PATTERN: "gpt4",
    LLAMA3_PATTERN: "gpt4",  # also tiktoken's cl100k string until 2024
    CL100K_PATTERN: "cl100k",
    O200K_PATTERN: "o200k",
    QWEN2_PATTERN: "qwen2",
}
"""Every pattern string the compiled pre-tokenizer serves -> its family (``FAMILIES``).
tests/test_pretokenize_core.py checks each string against its family on arbitrary text."""


def pattern_name(pattern: PatternSpec) -> str | None:
    """The name in ``PATTERNS`` of a regex's text (a worker process or a loaded file gives
    the text), None for another; the text is not compiled."""
    return next((name for name, text in PATTERNS.items() if text == pattern), None)


class PreTokenizer:
    """Splits text at special tokens, then into regex pre-tokens.

    ``pattern``: a name from ``PATTERNS``, a regex, or stages (``engine.corpus.stages``).
    ``special_tokens``: strings, or ``AddedToken``s matched as HF matches them;
    ``normalizer``: ``"NFC"`` or None, applied to the text between the added tokens.
    """

    def __init__(
        self, pattern: str | Sequence[Stage] = "gpt2", special_tokens: Sequence[str | AddedToken] = (), normalizer: str | None = None
    ) -> None:
        spec = simplest(pattern)
        self.pattern: PatternSpec = PATTERNS.get(spec, spec) if isinstance(spec, str) else spec
        self.pattern_name = pattern_name(self.pattern)
        self.regex = regex.compile(self.pattern) if isinstance(self.pattern, str) else None
        """The regex of a single pattern; None for stages."""
        self.stages = Stages((Split(self.pattern),) if isinstance(self.pattern, str) else self.pattern)
        self.added = tuple(s if isinstance(s, AddedToken) else AddedToken(s, -1) for s in special_tokens)
        """Every token cut out before pre-tokenization; ids are -1 where only strings were given."""
        self.special_tokens = tuple(s.content for s in self.added)
        self.normalizer = normalizer
        self.matcher = AddedTokens(self.added, normalizer)
        self.plain = self.matcher.one_pass
        """Whether the added tokens are cut out as plain strings in one pass (longest first
        where they overlap), as the compiled encoder cuts them, with no normalizer."""
        # Longest first, so "<|a|><|a|>" wins over "<|a|>" where both match.
        ordered = sorted(set(self.special_tokens), key=len, reverse=True)
        self.special_regex = regex.compile("|".join(regex.escape(s) for s in ordered)) if ordered else None
        self.family = KNOWN_PATTERNS.get(self.pattern) if isinstance(self.pattern, str) else None
        """The compiled pre-tokenizer's family for this pattern (``FAMILIES``), None for regex."""
        self.family_id = FAMILIES.index(self.family) if self.family is not None else -1
        self.chunked = self.family is not None and self.plain

    def split_added(self, text: str) -> Iterator[tuple[str, AddedToken | None]]:
        """Yield ``(piece, token)`` in order: each added token with the text it covers, each
        ordinary piece (normalized) with None; empty ordinary pieces are skipped."""
        if not self.plain:
            yield from self.matcher.split(text)
            return
        tokens = self.matcher.first.by_text or self.matcher.second.by_text
        for piece, special in self.split_special(text):
            yield piece, tokens[piece] if special else None

    def split_special(self, text: str) -> Iterator[tuple[str, bool]]:
        """Yield ``(piece, is_special)`` in order; empty ordinary pieces are skipped."""
        if not self.plain:
            yield from ((piece, token is not None) for piece, token in self.matcher.split(text))
            return
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

    def safe_cut(self, text: str) -> int:
        """The last index at which ``text`` can be cut without changing its pre-tokens.

        Used to stream: the text before the cut is final, the rest waits for more input.
        ``text`` must start at a boundary (the start of the stream or an earlier cut).
        Candidates: the end of a special token; under the compiled patterns also
        ``cut_rules`` (a space after a non-space, a newline or carriage return after a
        non-space or a letter or digit), and the start of a line (``_last_line_cut``). The
        last ``longest special token`` characters are
        never cut: more input could still make them part of a longer special token. 0 when
        there is no candidate.
        """
        width = max(map(len, self.special_tokens), default=1)
        limit = len(text) - width + 1
        if limit <= 0:
            return 0
        # Matched from the start: overlapping special tokens pair up differently elsewhere.
        if self.plain:
            specials = [m.span() for m in self.special_regex.finditer(text)] if self.special_regex else []
        else:  # a token's end is a cut where the character after it is known (it may take in spaces, or be in a word)
            specials = [span for span in self.matcher.first_spans(text) if span[1] < len(text)]
        cut = max((end for _, end in specials if end <= limit), default=0)
        for char, bad_before in self.cut_rules:
            cut = max(cut, _last_cut(text, char, bad_before, cut, limit, specials))
        if self.chunked:
            cut = max(cut, _last_line_cut(text, cut, limit, specials, self.family == "gpt2"))
        return cut

    @property
    def cut_rules(self) -> tuple[tuple[str, Callable[[str], bool]], ...]:
        """The characters before which a pre-token always starts (outside special tokens),
        each with the test of the character before it that rules the cut out: a space after a
        non-space; a newline or carriage return after a non-space (GPT-2) or a letter or
        digit (the others: punctuation takes in the newlines after it). None under a pattern
        that runs through ``regex``."""
        if not self.chunked:
            return ()
        bad_before = str.isspace if self.family == "gpt2" else _not_alnum
        return ((" ", str.isspace), ("\n", bad_before), ("\r", bad_before))

    def pretokens(self, piece: str) -> list[str]:
        """Pre-tokens of one ordinary piece.

        The compiled patterns match every character (and run in C). Another pattern may
        not: the text between its matches is kept as pre-tokens too, as Hugging Face's
        ``Split`` with ``behavior: Isolated`` does, so no text is ever dropped. Stages run
        in turn. A piece is cut the same whatever the added tokens or normalizer around
        it, so a known pattern runs in C here even where the encoder cannot.
        """
        if self.family is not None:
            return _compiled_pretokens(piece, self.family_id)
        return self.stages.pieces(piece)

    def count(self, text: str) -> Counter[bytes]:
        """Pre-token counts of ``text`` (special tokens excluded), as UTF-8 bytes."""
        tally = self.new_tally()
        self.tally(text, tally)
        return Counter(tally.counts())

    def new_tally(self) -> Tally:
        """An empty ``Tally`` for ``tally``: it scans with this pattern's compiled pre-tokenizer,
        or counts what it is given whole."""
        return Tally(self.family_id)

    def tally(self, text: str, into: Tally) -> None:
        """Add the pre-token counts of ``text`` (special tokens excluded) to ``into``, a
        ``new_tally()``."""
        if self.family is not None:
            into.add_all(self.pieces(text))
        else:
            for piece in self.pieces(text):
                into.add_all(self.stages.pieces(piece))


def _not_alnum(ch: str) -> bool:
    return not ch.isalnum()


def _last_cut(
    text: str,
    char: str,
    bad_before: Callable[[str], bool],
    floor: int,
    limit: int,
    specials: list[tuple[int, int]],
) -> int:
    """The last ``char`` in ``(floor, limit]`` whose predecessor is not ``bad_before`` and
    that no special token spans (0 if none)."""
    starts = [start for start, _ in specials]
    i = limit + 1
    while True:
        i = text.rfind(char, floor + 1, i)
        if i < 0:
            return 0
        if bad_before(text[i - 1]):
            continue
        k = bisect_right(starts, i - 1) - 1  # the last special token starting before i
        if k < 0 or specials[k][1] <= i:
            return i


_INDENT = regex.compile(r"[^\S\r\n]*")
"""Whitespace that is no newline: a line's indent."""


def _last_line_cut(text: str, floor: int, limit: int, specials: list[tuple[int, int]], lone: bool) -> int:
    """The last index in ``(floor, limit]`` just after a newline where a pre-token starts
    whatever follows, that no special token spans (0 if none). Under GPT-2 (``lone``): after
    a newline that follows a non-space, before a non-space (its whitespace runs give their
    last character to what follows them). Under the others, after the last newline of a
    whitespace run, where their newline rule (``\\s*[\\r\\n]``) ends it, though an indent
    follows (a Chinese text's lines may start with ideographic spaces): before a character
    that is no whitespace, within the text seen; not a ``/`` right after the newline (o200k's
    punctuation takes in the newlines and slashes after it); after an indent, no special
    token (the indent would end its text)."""
    starts = [start for start, _ in specials]
    end = min(limit, len(text) - 1)
    while True:
        n = text.rfind("\n", floor, end)
        if n < 0:
            return 0
        end, cut = n, n + 1
        if lone:
            if text[cut].isspace() or n == 0 or text[n - 1].isspace():
                continue
        else:
            indent = _INDENT.match(text, cut)
            assert indent is not None  # it may be empty
            after = indent.end()
            if after == cut and text[cut] in "\r\n/":
                continue
            if after > cut and (after >= limit or text[after] in "\r\n" or after in starts):
                continue
        k = bisect_right(starts, cut - 1) - 1  # the last special token starting before the cut
        if k < 0 or specials[k][1] <= cut:
            return cut
