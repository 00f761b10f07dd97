"""tiktoken's rank files (``.tiktoken``, optionally gzipped): GPT-4's and GPT-4o's tokenizers.

A rank file is one line per token: the base64 of its bytes, a space, its rank, which is
its id. It holds no merges, no pattern and no special tokens. The merges are recovered
(``engine.formats._ranks_core``): a token's merge is the last step of BPE over its own
bytes with only lower ranks, and merging by those merges in rank order takes the same
steps as tiktoken does on every text. The pattern and special tokens come from tiktoken's
constructors; the two published encodings are known by the SHA-256 of their uncompressed
content, any other rank file is given its pattern.

A file that is not byte-level BPE is refused with the line at fault: a line that is not
``base64 rank``, a rank or token listed twice, a token that merging lower-ranked tokens
does not make, or a missing single byte.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import operator
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from typing import NoReturn

from engine.corpus.pretokenize import CL100K_PATTERN, O200K_PATTERN
from engine.errors import ModelFileError, SettingsError, unreadable
from engine.formats._ranks_core import recover_merges
from engine.formats.atomic import Pathish

SUFFIXES = (".tiktoken", ".tiktoken.gz")

_NOT_SEPARATORS = bytes(b for b in range(256) if b not in b" \n")


@dataclass(frozen=True, slots=True)
class Encoding:
    """A published rank file's name, pattern and special tokens."""

    name: str
    pattern: str
    special_tokens: dict[str, int]


KNOWN = {
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7": Encoding(
        "cl100k_base",
        CL100K_PATTERN,
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    ),
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d": Encoding(
        "o200k_base", O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
    ),
}
"""The published rank files by the SHA-256 of their uncompressed content (what tiktoken checks)."""


@dataclass(frozen=True, slots=True)
class Ranks:
    """What a rank file holds and what goes with it."""

    vocab: dict[int, bytes]
    """Every id: the ranks' tokens and the special tokens."""
    merges: list[tuple[bytes, bytes]]
    """One per token of two bytes or more, in rank order."""
    merge_ids: tuple[list[int], list[int], list[int]]
    """The ids of each merge's left, right and result."""
    pattern: str
    special_tokens: dict[str, int]
    encoding: str | None
    """The published encoding it is (``cl100k_base``...), or None."""


def is_rank_file(path: Pathish) -> bool:
    return Path(path).name.endswith(SUFFIXES)


def read_rank_file(path: Pathish, pattern: str | None = None, special_tokens: Mapping[str, int] | None = None) -> Ranks:
    """Read a ``.tiktoken`` or ``.tiktoken.gz`` file. ``pattern`` and ``special_tokens``
    default to the published encoding's when the file is one; another file needs a
    ``pattern`` (``SettingsError`` without one) and has no special tokens unless given."""
    path = Path(path)
    data = _read(path)
    known = KNOWN.get(hashlib.sha256(data).hexdigest())
    if pattern is None:
        if known is None:
            raise SettingsError(
                f"{path}: not a published rank file (cl100k_base, o200k_base): give its pre-tokenizer pattern (--pattern REGEX)"
            )
        pattern = known.pattern
    if special_tokens is None:
        special_tokens = known.special_tokens if known else {}
    tokens, ranks = _parse(path, data)
    if ranks != sorted(ranks):
        order = sorted(range(len(ranks)), key=ranks.__getitem__)
        tokens, ranks = [tokens[k] for k in order], [ranks[k] for k in order]
    longer = list(map((1).__lt__, map(len, tokens)))  # per token: made by a merge (not a single byte)
    missing = set(range(256)).difference(t[0] for t in compress(tokens, map(operator.not_, longer)) if t)
    if missing:
        raise ModelFileError(f"{path}: no token is the single byte {min(missing):#04x}: not a byte-level BPE rank file")
    lefts, rights, bad = recover_merges(tokens)
    if bad >= 0:
        line = _line_of(data, ranks[bad])
        raise ModelFileError(
            f"{path}: line {line}: token {tokens[bad]!r} (rank {ranks[bad]}) is not made by merging lower-ranked tokens: "
            "not a byte-level BPE rank file"
        )
    made = list(compress(range(len(tokens)), longer))
    lefts, rights = list(compress(lefts, longer)), list(compress(rights, longer))
    merges = list(zip(map(tokens.__getitem__, lefts), map(tokens.__getitem__, rights), strict=True))
    if ranks[-1] != len(ranks) - 1:  # ranks with gaps: positions become ranks
        lefts, rights, made = (list(map(ranks.__getitem__, side)) for side in (lefts, rights, made))
    vocab = dict(zip(ranks, tokens, strict=True))
    for text, i in special_tokens.items():
        if i in vocab:
            raise SettingsError(f"{path}: special token {text!r} has id {i}, the rank of token {vocab[i]!r}")
    return Ranks(vocab, merges, (lefts, rights, made), pattern, dict(special_tokens), known.name if known else None)


def _read(path: Path) -> bytes:
    """The file's bytes, uncompressed when gzipped."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ModelFileError(unreadable(path, e)) from None
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise ModelFileError(f"{path}: not a readable gzip file ({e})") from None


def _parse(path: Path, data: bytes) -> tuple[list[bytes], list[int]]:
    """The tokens and ranks of the lines, in file order. All at once when the file is well
    formed (the usual case: every line two fields, one space between them, the first the
    canonical base64 of a token, the second digits); else line by line, to name the first
    bad line."""
    fields = data.split()
    if not fields:
        raise ModelFileError(f"{path}: empty: not a rank file")
    texts, numbers = fields[0::2], fields[1::2]
    try:
        tokens = list(map(binascii.a2b_base64, texts))
        if (
            len(texts) != len(numbers)
            or not b"".join(numbers).isdigit()
            or [line[:-1] for line in map(binascii.b2a_base64, tokens)] != texts
            or (data + b"\n"[data.endswith(b"\n") :]).translate(None, _NOT_SEPARATORS) != b" \n" * len(texts)  # one space a line
        ):
            raise ValueError
    except (ValueError, binascii.Error):
        _refuse_line(path, data.split(b"\n")[: -1 if data.endswith(b"\n") else None])
    ranks = list(map(int, numbers))
    if len(set(ranks)) != len(ranks):
        first: dict[int, int] = {}
        for n, rank in enumerate(ranks, start=1):
            if first.setdefault(rank, n) != n:
                raise ModelFileError(f"{path}: line {n}: rank {rank} is given twice (first on line {first[rank]})")
    if len(set(tokens)) != len(tokens):
        seen: dict[bytes, int] = {}
        for n, token in enumerate(tokens, start=1):
            if seen.setdefault(token, n) != n:
                raise ModelFileError(f"{path}: line {n}: token {token!r} is listed twice (first on line {seen[token]})")
    return tokens, ranks


def _refuse_line(path: Path, lines: list[bytes]) -> NoReturn:
    """Raise the ``ModelFileError`` that names the first malformed line."""
    for n, line in enumerate(lines, start=1):
        f = line.split(b" ")
        shown = line[:60].decode("utf-8", errors="replace")
        if len(f) != 2 or not f[1].isdigit():
            raise ModelFileError(f"{path}: line {n} is not 'base64 rank': {shown!r}")
        try:
            token = base64.b64decode(f[0], validate=True)
        except binascii.Error:
            token = None
        if token is None or base64.b64encode(token) != f[0]:
            raise ModelFileError(f"{path}: line {n}: {shown!r} does not start with the base64 of a token")
    raise ModelFileError(f"{path}: not a rank file (lines of 'base64 rank')")  # pragma: no cover (each bad line is named above)


def _line_of(data: bytes, rank: int) -> int:
    """The line that gives ``rank``."""
    for n, line in enumerate(data.split(b"\n"), start=1):
        if line.split(b" ")[-1] == str(rank).encode():
            return n
    raise AssertionError(f"rank {rank} is on no line")  # pragma: no cover
