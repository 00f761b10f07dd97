"""Whole words, counted: what word-level trainers start from (classic ``</w>`` BPE, WordPiece).

A word splitter cuts text into words; ``count_words`` counts them in first-seen order, and
``count_file_words`` reads a corpus file in blocks to do so, with the byte-level reading's
one-line errors; ``merge_symbols`` rewrites a word's symbols after a merge. The splitters:

- ``whitespace``: ``str.split`` (seed 004);
- ``punct``: runs of word characters and single punctuation marks, ``\\w+|[^\\w\\s]`` (seed 002);
- ``bert``: Hugging Face ``BertPreTokenizer``: whitespace (Unicode ``White_Space``) dropped,
  each punctuation character a word of its own, where punctuation is ASCII punctuation
  (``!"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~``, symbols included) or Unicode ``P*`` as
  ``tokenizers``' own tables have it (``engine.corpus.hf_unicode``).

``lowercase`` lowers text as ``tokenizers``' ``Lowercase`` normalizer does, by its tables too.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import TypeVar

import regex

from engine.corpus.counting import Progress
from engine.corpus.hf_unicode import LOWERCASE, PUNCTUATION_RANGES
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.shards import read_blocks
from engine.corpus.sources import open_binary
from engine.errors import CorpusError

T = TypeVar("T")

ASCII_PUNCTUATION = r"!-/:-@\[-`{-~"
WORD_BLOCK = 256 << 10
"""Bytes of a file counted at once: a block's words are Python strings while it is counted
(2 MB of English is 19 MB of them), so blocks are kept small; counting is no slower."""
TABLE_PLANES = 0x20000
"""Unicode's punctuation and cased letters lie in its first two planes (the rest hold
ideographs, tags and private use): only there can Python's, ``regex``'s and ``tokenizers``'
tables differ."""


@cache
def bert_words() -> regex.Pattern[str]:
    """``BertPreTokenizer``'s words: a punctuation character alone, or a run of anything else
    but whitespace. Made on first use: ``regex``'s ``\\p{P}`` (fast) with the characters
    where its Unicode data and ``tokenizers``' differ taken out or added (20 ms to find)."""
    every = _every_character()
    theirs = {chr(c) for a, b in PUNCTUATION_RANGES for c in range(a, b + 1)}
    ours = set(regex.findall(rf"[\p{{P}}{ASCII_PUNCTUATION}]", every))
    punctuation = rf"[\p{{P}}{ASCII_PUNCTUATION}]"
    if ours - theirs:
        punctuation = f"[{punctuation}--[{''.join(map(regex.escape, sorted(ours - theirs)))}]]"
    if theirs - ours:
        punctuation += f"||[{''.join(map(regex.escape, sorted(theirs - ours)))}]"
    return regex.compile(rf"(?V1)[{punctuation}]|[^\p{{White_Space}}{punctuation}]+")


def _bert_split(text: str) -> list[str]:
    return bert_words().findall(text)


_NOT_WHITE_SPACE = "\x1c\x1d\x1e\x1f"
"""What ``str.split`` cuts at besides Unicode's ``White_Space``."""


def _count_bert(text: str) -> Counter[str]:
    """``Counter(_bert_split(text))``, in the same first-seen order, twice as fast: ``str.split``
    cuts at whitespace in C, and only each distinct piece goes through the regex."""
    if any(c in text for c in _NOT_WHITE_SPACE):
        return Counter(_bert_split(text))
    find = bert_words().findall
    counts: Counter[str] = Counter()
    for piece, n in Counter(text.split()).items():
        for word in find(piece):
            counts[word] += n
    return counts


WORD_SPLITS: dict[str, Callable[[str], list[str]]] = {
    "whitespace": str.split,
    "punct": re.compile(r"\w+|[^\w\s]").findall,
    "bert": _bert_split,
}
"""How text becomes words: at whitespace (seed 004), words and punctuation (seed 002), or as BERT does."""


def lowercase(text: str) -> str:
    """Each character lowercased on its own, as Hugging Face's ``Lowercase`` normalizer does:
    a word-final Σ becomes σ (``str.lower`` makes it ς), and characters whose case Python's
    Unicode tables and ``tokenizers``' see differently go by ``tokenizers``'."""
    if "Σ" in text:
        text = text.replace("Σ", "σ")
    fixes, after_lower = _lowering()
    if not fixes:
        return text.lower()
    if after_lower:  # a few rare characters: find each (a fast search), rather than translate the text (slow)
        lowered = text.lower()
        if not lowered.isascii():
            for c, want in fixes.items():
                if chr(c) in lowered:
                    lowered = lowered.replace(chr(c), want)
        return lowered
    return "".join(fixes.get(ord(c)) or c.lower() for c in text)


@cache
def _lowering() -> tuple[dict[int, str], bool]:
    """Where ``str.lower`` and ``tokenizers`` lower a character differently, what
    ``tokenizers`` makes of it; and whether these can be put right after ``str.lower``
    (none of them is what ``str.lower`` makes of another character)."""
    theirs = {c: "".join(map(chr, to)) for c, to in LOWERCASE}
    fixes: dict[int, str] = {}
    made: set[str] = set()
    for c in _every_character():
        ours = c.lower()
        if ours != c:
            made.update(ours)
        if ours != (want := theirs.get(ord(c), c)):
            fixes[ord(c)] = want
    return fixes, not made & set(map(chr, fixes))


def _every_character() -> str:
    """Every code point of the planes the tables cover, but the surrogates, in order."""
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, TABLE_PLANES)))


def count_words(texts: Iterable[str], split: str = "whitespace", normalize: Callable[[str], str] | None = None) -> Counter[str]:
    """Word counts in first-seen order (a ``Counter`` keeps insertion order), each text
    passed through ``normalize`` first when given."""
    cut = WORD_SPLITS[split]
    counts: Counter[str] = Counter()
    for text in texts:
        text = normalize(text) if normalize else text
        counts.update(_count_bert(text) if split == "bert" else cut(text))
    return counts


def count_file_words(
    path: str | os.PathLike[str],
    split: str = "whitespace",
    progress: Progress | None = None,
    errors: str = "strict",
    block_size: int = WORD_BLOCK,
    normalize: Callable[[str], str] | None = None,
) -> Counter[str]:
    """Word counts of a corpus file, read in blocks cut before a space or newline that
    follows a non-space (GPT-2's safe cuts: a word of every splitter ends there), with the
    same one-line errors as the byte-level trainer's reading."""
    total = os.path.getsize(path) if os.path.isfile(path) else None  # a stream's size is unknown
    read = 0

    def texts() -> Iterator[str]:
        nonlocal read
        with open_binary(str(path)) as f:
            for text, read in read_blocks(f, PreTokenizer("gpt2"), block_size, errors, str(path)):
                yield text
                if progress is not None:
                    progress("read", read, total)

    counts = count_words(texts(), split, normalize)
    if not counts:
        what = "it holds nothing but whitespace" if read else "the file is empty"
        raise CorpusError(f"{path}: {what}: no words to train on")
    return counts


def merge_symbols(word: tuple[T, ...], a: T, b: T, new: T) -> tuple[T, ...]:
    """Replace each ``a b`` in ``word`` by ``new``, left to right without overlap (the notes'
    ``update_splits``): symbols as strings (classic BPE, WordPiece) or as ids (byte-level BPE)."""
    out = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)
