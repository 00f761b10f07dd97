"""Pre-tokenizers beyond one regex, as Hugging Face ``tokenizer.json`` files describe them.

A pre-tokenizer is either one pattern (a regex string: the common case, see
``engine.corpus.pretokenize``) or a sequence of stages, each applied to every piece the one
before it left:

- ``Split``: HF's ``Split`` pre-tokenizer, a regex and a behaviour for its matches
  (``isolated``: matches and the text between them are pieces; ``removed``: matches are
  dropped; ``merged_with_previous`` / ``merged_with_next``: each match joins the piece
  before / after it; ``contiguous``: runs of matches, and runs of non-matches, are pieces),
  optionally inverted (what the regex matches is the text between delimiters);
- ``PrefixSpace``: ByteLevel's ``add_prefix_space``, a space before each piece that does not
  start with one.

HF's ``ByteLevel`` pre-tokenizer is ``PrefixSpace`` (with ``add_prefix_space``) then
``Split(GPT-2's regex)`` (with ``use_regex``); its byte-to-character mapping is what
byte-level BPE does anyway. Empty pieces are dropped, as HF drops them.

Added tokens (``AddedToken``) are cut out of the text before pre-tokenization, as HF's
``AddedVocabulary`` cuts them: first those matched on the raw text (``normalized`` false,
as special tokens are), then the text between them is normalized (NFC, the one normalizer
byte-level BPE files use) and those matched on normalized text are cut out of it; each
pass takes the leftmost, then longest, occurrence, with ``lstrip`` / ``rstrip`` taking the
whitespace beside a token into it and ``single_word`` refusing an occurrence inside a word.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import regex

Behavior = Literal["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"]
BEHAVIORS: tuple[Behavior, ...] = get_args(Behavior)

NORMALIZERS: dict[str, Callable[[str], str]] = {"NFC": lambda text: unicodedata.normalize("NFC", text)}
"""The normalizers a byte-level tokenizer may apply before pre-tokenizing, by HF's name."""


@dataclass(frozen=True, slots=True)
class Split:
    """Cut each piece where ``pattern`` (a regex) matches; ``behavior`` says what becomes of
    the matches, ``invert`` swaps matches and the text between them."""

    pattern: str
    behavior: Behavior = "isolated"
    invert: bool = False

    def __post_init__(self) -> None:
        if self.behavior not in BEHAVIORS:
            raise ValueError(f"Split behavior {self.behavior!r} is none of {', '.join(BEHAVIORS)}")


@dataclass(frozen=True, slots=True)
class PrefixSpace:
    """A space before each piece that does not start with one (ByteLevel's ``add_prefix_space``)."""


Stage = Split | PrefixSpace
PatternSpec = str | tuple[Stage, ...]
"""A pre-tokenizer: one regex (a name from ``PATTERNS`` or the regex itself), or stages."""


def simplest(pattern: str | Sequence[Stage]) -> PatternSpec:
    """``pattern`` in its simplest form: stages that are one isolated ``Split`` are its regex."""
    if isinstance(pattern, str):
        return pattern
    stages = tuple(pattern)
    if len(stages) == 1 and isinstance(stages[0], Split) and stages[0] == Split(stages[0].pattern):
        return stages[0].pattern
    return stages


def describe(pattern: PatternSpec) -> Any:
    """``pattern`` as JSON: the regex, or a list of its stages."""
    if isinstance(pattern, str):
        return pattern
    return [
        {"split": s.pattern, "behavior": s.behavior, "invert": s.invert} if isinstance(s, Split) else {"prefix_space": True}
        for s in pattern
    ]


def _matches(compiled: regex.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The spans ``compiled`` matches in ``text``, found as Oniguruma (HF's regex engine)
    finds them: an empty match right where the previous match ended does not count, and the
    search goes on from the next character."""
    spans = [m.span() for m in compiled.finditer(text)]
    if all(start < end for start, end in spans):
        return spans  # no empty match: Python finds what Oniguruma finds
    spans = []
    pos, last_end = 0, -1
    while pos <= len(text):
        m = compiled.search(text, pos)
        if m is None:
            break
        start, end = m.span()
        if start == end == last_end:
            pos = end + 1
            continue
        spans.append((start, end))
        pos = last_end = end
        if start == end:
            pos += 1
    return spans


def split_spans(compiled: regex.Pattern[str], behavior: Behavior, invert: bool, text: str) -> list[tuple[int, int]]:
    """The pieces of ``text`` under one ``Split``, as spans (empty ones dropped)."""
    marked: list[tuple[int, int, bool]] = []  # the whole text, each span a match or not
    prev = 0
    for start, end in _matches(compiled, text):
        if prev != start:
            marked.append((prev, start, invert))
        marked.append((start, end, not invert))
        prev = end
    if prev != len(text):
        marked.append((prev, len(text), invert))
    spans: list[list[int]] = []
    if behavior == "isolated":
        spans = [[s, e] for s, e, _ in marked]
    elif behavior == "removed":
        spans = [[s, e] for s, e, is_match in marked if not is_match]
    elif behavior == "contiguous":
        previous = False
        for s, e, is_match in marked:
            if spans and is_match == previous:
                spans[-1][1] = e
            else:
                spans.append([s, e])
            previous = is_match
    elif behavior == "merged_with_previous":
        previous = False
        for s, e, is_match in marked:
            if spans and is_match and not previous:
                spans[-1][1] = e
            else:
                spans.append([s, e])
            previous = is_match
    else:  # merged_with_next: the same from the end
        previous = False
        for s, e, is_match in reversed(marked):
            if spans and is_match and not previous:
                spans[-1][0] = s
            else:
                spans.append([s, e])
            previous = is_match
        spans.reverse()
    return [(s, e) for s, e in spans if s < e]


class Stages:
    """Stages compiled: ``pieces(text)`` runs them."""

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = tuple(stages)
        self._compiled = [regex.compile(s.pattern) if isinstance(s, Split) else None for s in self.stages]

    def pieces(self, text: str) -> list[str]:
        pieces = [text] if text else []
        for stage, compiled in zip(self.stages, self._compiled, strict=True):
            if compiled is None:
                pieces = [p if p.startswith(" ") else " " + p for p in pieces]
                continue
            assert isinstance(stage, Split)  # compiled for every Split
            isolated = stage.behavior == "isolated" and not stage.invert and not compiled.groups
            out = []
            for piece in pieces:
                if isolated:
                    # The usual case, in one call: a regex that matches the whole piece, with
                    # no empty match, cuts it into its matches (GPT-4's, Llama-3's, ...).
                    found = compiled.findall(piece)
                    if "" not in found and sum(map(len, found)) == len(piece):
                        out += found
                        continue
                out += [piece[s:e] for s, e in split_spans(compiled, stage.behavior, stage.invert, piece)]
            pieces = out
        return pieces


# -- added tokens ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddedToken:
    """A token cut out of the text before pre-tokenization, whole, with its own id (HF's
    ``added_tokens`` entry). ``special``: a special token (``<|endoftext|>``), shown and
    exported as one; the other fields say how it is matched (see the module docstring)."""

    content: str
    id: int
    special: bool = True
    normalized: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False

    @property
    def plain(self) -> bool:
        """Matched as written, with nothing around it taken in or checked."""
        return not (self.lstrip or self.rstrip or self.single_word)


_WORD_BEFORE = regex.compile(r"\w\Z")
_WORD = regex.compile(r"\w")
_SPACE_BEFORE = regex.compile(r"\s*\Z")
_SPACES = regex.compile(r"\s*")


class _Pass:
    """One pass over the text: the tokens it cuts out, leftmost first, then longest."""

    def __init__(self, tokens: Sequence[AddedToken], normalize: Callable[[str], str] | None) -> None:
        by_text: dict[str, AddedToken] = {}
        for token in tokens:  # a later entry with the same text wins, as it does in HF
            by_text[normalize(token.content) if normalize else token.content] = token
        self.by_text = {text: token for text, token in by_text.items() if text}
        ordered = sorted(self.by_text, key=len, reverse=True)
        self.regex = regex.compile("|".join(map(regex.escape, ordered))) if ordered else None
        self.plain = all(t.plain for t in self.by_text.values())

    def spans(self, text: str) -> list[tuple[int, int, AddedToken]]:
        """Where tokens are cut out of ``text``: ``(start, end, token)`` in order, ``start``
        and ``end`` taking in the whitespace ``lstrip`` and ``rstrip`` take."""
        if self.regex is None:
            return []
        found = []
        done = 0  # where the previous cut ended
        for m in self.regex.finditer(text):
            start, end = m.span()
            token = self.by_text[m.group()]
            if token.single_word and ((start and _WORD_BEFORE.search(text, 0, start)) or (end < len(text) and _WORD.match(text, end))):
                continue
            if token.lstrip:
                space = _SPACE_BEFORE.search(text, 0, start)
                start = max(space.start() if space else start, done)
            if token.rstrip:
                space = _SPACES.match(text, end)
                end = space.end() if space else end
            found.append((start, end, token))
            done = end
        return found


class AddedTokens:
    """Cuts added tokens out of text, as HF does (see the module docstring)."""

    def __init__(self, tokens: Sequence[AddedToken], normalizer: str | None = None) -> None:
        self.tokens = tuple(tokens)
        self.normalize = NORMALIZERS[normalizer] if normalizer else None
        self.first = _Pass([t for t in self.tokens if not t.normalized], None)
        """Matched on the raw text."""
        self.second = _Pass([t for t in self.tokens if t.normalized], self.normalize)
        """Matched, as normalized, on the normalized text between the first pass's tokens."""
        self.one_pass = self.normalize is None and (self.first.regex is None or self.second.regex is None)
        self.one_pass = self.one_pass and self.first.plain and self.second.plain
        """Whether one plain pass over the raw text finds them all: no normalizer, no tokens
        left for a second pass, nothing around a token looked at."""

    def split(self, text: str) -> Iterator[tuple[str, AddedToken | None]]:
        """``(piece, token)`` in order: each added token with the text it covers, and each
        piece between them (normalized) with None; empty pieces are skipped."""
        for piece, token in self._cut(self.first, text):
            if token is not None:
                yield piece, token
                continue
            if self.normalize is not None:
                piece = self.normalize(piece)
            yield from self._cut(self.second, piece)

    @staticmethod
    def _cut(cuts: _Pass, text: str) -> Iterator[tuple[str, AddedToken | None]]:
        at = 0
        for start, end, token in cuts.spans(text):
            if start > at:
                yield text[at:start], None
            yield text[start:end], token
            at = end
        if at < len(text):
            yield text[at:], None

    def first_spans(self, text: str) -> list[tuple[int, int]]:
        """The spans of the tokens the first pass cuts out of ``text``, in order: a stream
        may be cut after one (see ``PreTokenizer.safe_cut``), the rest is matched anew from
        there, as it would be in the whole text."""
        return [(start, end) for start, end, _ in self.first.spans(text)]
