"""Saved pre-token counts: count a corpus once, train from the counts at any vocabulary size.

The file is one line of JSON (the pattern and special tokens the counts were made with, the
inputs and their digest, how many records there are, the payload's length and BLAKE2b),
then the payload: the counts as little-endian uint64, the lengths of the pre-tokens as
uint32, then the pre-tokens' bytes one after another, all in sorted order of the pre-tokens
(so the same corpus and settings always give the same file): a ``WordTable`` as
``count_table`` makes it, saved and loaded with a few array copies, no dict. It is written to a
temporary file and renamed, never half a file (``OutputError`` if it cannot be).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from array import array
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from engine.corpus.counting import CountSummary
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.sources import open_binary
from engine.corpus.word_table import WordTable
from engine.errors import CorpusError
from engine.formats.atomic import atomic_write

FORMAT = "bpe-tui pre-token counts"
VERSION = 1


@dataclass(frozen=True, slots=True)
class SavedCounts:
    """A counts file's contents."""

    table: WordTable
    """The counts, sorted by pre-token."""
    pattern: str
    """The pre-tokenizer's regex."""
    special_tokens: tuple[str, ...]
    summary: CountSummary

    @property
    def counts(self) -> Counter[bytes]:
        return self.table.counter()


def _little(values: array) -> bytes:  # type: ignore[type-arg]
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def kept_counts_folder(path: str | os.PathLike[str]) -> Path:
    """Where the counts bound for the file ``path`` are kept as they are counted
    (``engine.corpus.runs``), so that a stopped count goes on: ``FILE.parts``."""
    return Path(f"{os.fspath(path)}.parts")


def save_counts(path: str | os.PathLike[str], table: WordTable, pretok: PreTokenizer, summary: CountSummary) -> None:
    """Write ``table`` with what it was made from to ``path``, atomically."""
    table = table.by_word()
    ends = table.ends
    payload = b"".join(
        (
            _little(array("Q", table.counts)),
            _little(array("I", (b - a for a, b in zip([0, *ends], ends, strict=False)))),
            table.words,
        )
    )
    header = {
        "format": FORMAT,
        "version": VERSION,
        "pattern": pretok.pattern,
        "special_tokens": list(pretok.special_tokens),
        "inputs": [list(item) for item in summary.inputs],
        "bytes_read": summary.bytes_read,
        "bad_records": summary.bad_records,
        "digest": summary.digest,
        "skipped_inputs": list(summary.skipped_inputs),
        "pretokens": len(table),
        "payload_bytes": len(payload),
        "payload_blake2b": hashlib.blake2b(payload, digest_size=16).hexdigest(),
    }
    atomic_write(path, json.dumps(header, ensure_ascii=False).encode("utf-8") + b"\n" + payload)


def saved_sizes(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(pre-tokens, their bytes in all)`` from a counts file's header alone, to size what it
    holds before reading it; None where the header does not say (``load_counts`` then tells
    what is wrong)."""
    try:
        with open_binary(os.fspath(path)) as f:
            header = json.loads(f.readline(1 << 26))
        n = int(header["pretokens"])
        return n, int(header["payload_bytes"]) - 12 * n  # a count (8 bytes) and a length (4) each, then the bytes
    except (OSError, ValueError, KeyError, TypeError, CorpusError):
        return None


def load_counts(path: str | os.PathLike[str]) -> SavedCounts:
    """Read a counts file; ``CorpusError`` in one line if it is missing, corrupt or truncated."""
    with open_binary(os.fspath(path)) as f:
        line = f.readline(1 << 26)
        try:
            header = json.loads(line)
            ok = isinstance(header, dict) and header.get("format") == FORMAT
        except ValueError:
            ok = False
        if not ok:
            raise CorpusError(f"{path}: not a counts file (those are written by train --save-counts)")
        if header.get("version") != VERSION:
            raise CorpusError(f"{path}: counts file version {header.get('version')}, this bpe-tui reads version {VERSION}")
        try:
            n, size = int(header["pretokens"]), int(header["payload_bytes"])
            summary = CountSummary(
                tuple((str(p), int(s)) for p, s in header["inputs"]),
                int(header["bytes_read"]),
                int(header["bad_records"]),
                str(header["digest"]),
                tuple(map(str, header.get("skipped_inputs", ()))),
            )
            pattern, special_tokens = str(header["pattern"]), tuple(map(str, header["special_tokens"]))
            checksum = str(header["payload_blake2b"])
        except (KeyError, TypeError, ValueError) as e:
            raise CorpusError(f"{path}: corrupt counts file header ({type(e).__name__}: {e})") from None
        if not 0 <= 12 * n <= size:
            raise CorpusError(f"{path}: corrupt counts file: its {n:,} pre-tokens and their counts do not fit its {size:,} bytes")
        # The counts and lengths, then the pre-tokens' bytes read straight into the object the
        # table keeps: no copy of the largest part beside the file's whole payload.
        head, words = f.read(12 * n), f.read(size - 12 * n)
        more = f.read(1)
    if len(head) + len(words) != size:
        raise CorpusError(f"{path}: truncated counts file: {len(head) + len(words):,} of {size:,} bytes after the header")
    if more:
        raise CorpusError(f"{path}: corrupt counts file: more than its {size:,} bytes after the header")
    digest = hashlib.blake2b(head, digest_size=16)
    digest.update(words)
    if digest.hexdigest() != checksum:
        raise CorpusError(f"{path}: corrupt counts file: its contents do not match their checksum")
    values, lengths = array("Q"), array("I")
    values.frombytes(head[: 8 * n])
    lengths.frombytes(head[8 * n :])
    del head
    if sys.byteorder == "big":
        values.byteswap()
        lengths.byteswap()
    # A file that passes its checksum was written so, or made to pass: its parts must fit.
    if sum(lengths) != size - 12 * n or not all(0 < v < 1 << 63 for v in values):
        raise CorpusError(f"{path}: corrupt counts file: its {n:,} pre-tokens and their counts do not fit its {size:,} bytes")
    table = WordTable(words, array("q", accumulate(lengths)), array("q", values))
    return SavedCounts(table, pattern, special_tokens, summary)
