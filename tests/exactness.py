"""What the exactness tests compare against: the committed fixtures, random slices of real
text, and the reference encoders (tiktoken built offline, Hugging Face ``tokenizers``).

The reference side is built here from the files themselves, not through the engine's readers:
ranks are read as ``tiktoken.load.load_tiktoken_bpe`` reads them, patterns and special tokens
are the ones tiktoken's constructors give (``tiktoken_ext/openai_public.py``).
"""

from __future__ import annotations

import base64
import gzip
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from tests.conftest import fixture_file

ASSIGNED = st.characters(codec="utf-8", exclude_categories=["Cs", "Cn"])
"""Characters for random text compared with a reference encoder: any but surrogates and those
unassigned in Python's Unicode data. The references and ``regex`` each carry their own Unicode
version, so a character assigned only in the newest (U+3D000 is a letter to ``regex`` 2026.11,
unassigned to tiktoken) is classed differently by each, and the split differs for that reason
alone."""

CONFORMANCE = ["address.txt", "german.txt", "tinystories_sample.txt", "corpus.en"]
"""The conformance texts (copies of the shared fixtures)."""

CORPORA = ["en-mix-192k.txt", "zh-xiyouji-128k.txt"]
"""Excerpts of the benchmark corpora (English and Chinese; tests/fixtures/README.md)."""

ENCODINGS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    ),
    "o200k_base": (
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}
"""Each published encoding's pattern and special tokens, as tiktoken gives them."""


def text_of(name: str) -> str:
    return fixture_file(name).read_bytes().decode("utf-8")


def rank_file(name: str) -> Path:
    return fixture_file(f"{name}.tiktoken.gz")


@cache
def ranks_of(name: str) -> dict[bytes, int]:
    """The ranks of an encoding, read as tiktoken's ``load_tiktoken_bpe`` reads them."""
    contents = gzip.decompress(rank_file(name).read_bytes())
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in contents.splitlines() if line)}


@cache
def tiktoken_encoding(name: str) -> Any:
    """tiktoken's own encoder of a published encoding, built offline from the fixture."""
    tiktoken = pytest.importorskip("tiktoken")
    pattern, specials = ENCODINGS[name]
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks_of(name), special_tokens=specials)


def slices(name: str, count: int, seed: int, specials: tuple[str, ...] = ()) -> list[str]:
    """``count`` random slices of a corpus slice, 1 to 400 characters, starting anywhere
    (mid-word, mid-line, between CR and LF); with ``specials``, one slice in four has one
    of them put in at a random place."""
    text = text_of(name)
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        start = rng.randrange(len(text))
        piece = text[start : start + rng.randint(1, 400)]
        if specials and rng.random() < 0.25:
            at = rng.randint(0, len(piece))
            piece = piece[:at] + rng.choice(specials) + piece[at:]
        out.append(piece)
    return out
