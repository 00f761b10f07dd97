"""Whole words, counted: what word-level trainers start from (classic ``</w>`` BPE, WordPiece).

A word splitter cuts text into words; ``count_words`` counts them in first-seen order, and
``count_file_words`` reads a corpus file in blocks to do so, with the byte-level reading's
one-line errors; ``merge_symbols`` rewrites a word's symbols after a merge. The splitters:

- ``whitespace``: ``str.split`` (seed 004);
- ``punct``: runs of word characters and single punctuation marks, ``\\w+|[^\\w\\s]`` (seed 002);
- ``bert``: Hugging Face ``BertPreTokenizer``: whitespace (Unicode ``White_Space``) dropped,
  each punctuation character a word of its own, where punctuation is ASCII punctuation
  (``!"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~``, symbols included) or Unicode ``P*`` as
  ``tokenizers``' own tables have it (``engine.corpus.bert_punctuation``).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import cache

import regex

from engine.corpus.bert_punctuation import PUNCTUATION_RANGES
from engine.corpus.counting import Progress
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.shards import MAX_BLOCK, read_blocks
from engine.corpus.sources import open_binary
from engine.errors import CorpusError

ASCII_PUNCTUATION = r"!-/:-@\[-`{-~"
PUNCTUATION_PLANES = 0x20000
"""Unicode's punctuation lies in its first two planes (the rest hold ideographs, tags and
private use): only there can ``regex``'s and ``tokenizers``' tables differ."""


@cache
def bert_words() -> regex.Pattern[str]:
    """``BertPreTokenizer``'s words: a punctuation character alone, or a run of anything else
    but whitespace. Made on first use: ``regex``'s ``\\p{P}`` (fast) with the characters
    where its Unicode data and ``tokenizers``' differ taken out or added (20 ms to find)."""
    every = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, PUNCTUATION_PLANES)))
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
    ``str.lower`` gives a word-final Σ as ς, a character-by-character lowering as σ."""
    return "".join(map(str.lower, text)) if "Σ" in text else text.lower()


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
    block_size: int = MAX_BLOCK,
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


def merge_symbols(word: tuple[str, ...], a: str, b: str, joined: str | None = None) -> tuple[str, ...]:
    """Replace each ``a b`` in ``word`` by ``joined`` (default ``a + b``), left to right
    without overlap (the notes' ``update_splits``)."""
    new = a + b if joined is None else joined
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
