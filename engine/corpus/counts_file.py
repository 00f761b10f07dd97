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
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import BinaryIO

from engine.corpus.counting import CountSummary
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.sources import open_binary
from engine.corpus.word_table import TableParts, WordTable
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


@dataclass(frozen=True, slots=True)
class _Header:
    """What a counts file's first line says, and where its payload starts."""

    pretokens: int
    payload_bytes: int
    pattern: str
    special_tokens: tuple[str, ...]
    summary: CountSummary
    checksum: str
    at: int


def _read_header(f: BinaryIO, path: str | os.PathLike[str]) -> _Header:
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
    h = _Header(n, size, pattern, special_tokens, summary, checksum, len(line))
    if not 0 <= 12 * n <= size:
        raise _misfit(path, h)
    return h


def _misfit(path: str | os.PathLike[str], h: _Header) -> CorpusError:
    return CorpusError(
        f"{path}: corrupt counts file: its {h.pretokens:,} pre-tokens and their counts do not fit its {h.payload_bytes:,} bytes"
    )


def _native(values: array, lengths: array) -> None:  # type: ignore[type-arg]
    """The counts and lengths as stored (little-endian) made native."""
    if sys.byteorder == "big":
        values.byteswap()
        lengths.byteswap()


def _table(path: str | os.PathLike[str], h: _Header, values: array, lengths: array, words: bytes) -> WordTable:  # type: ignore[type-arg]
    """The counts and lengths of ``words`` as a table, checked."""
    # A file that passes its checksum was written so, or made to pass: its parts must fit.
    if sum(lengths) != len(words) or (values and not 0 < min(values) <= max(values) < 1 << 63):
        raise _misfit(path, h)
    return WordTable(words, array("q", accumulate(lengths)), array("q", values))


def _corrupt(path: str | os.PathLike[str], h: _Header, got: int, more: bytes, digest: str) -> None:
    if got != h.payload_bytes:
        raise CorpusError(f"{path}: truncated counts file: {got:,} of {h.payload_bytes:,} bytes after the header")
    if more:
        raise CorpusError(f"{path}: corrupt counts file: more than its {h.payload_bytes:,} bytes after the header")
    if digest != h.checksum:
        raise CorpusError(f"{path}: corrupt counts file: its contents do not match their checksum")


def load_counts(path: str | os.PathLike[str]) -> SavedCounts:
    """Read a counts file; ``CorpusError`` in one line if it is missing, corrupt or truncated."""
    with open_binary(os.fspath(path)) as f:
        h = _read_header(f, path)
        n = h.pretokens
        # The counts and lengths, then the pre-tokens' bytes read straight into the object the
        # table keeps: no copy of the largest part beside the file's whole payload.
        head, words = f.read(12 * n), f.read(h.payload_bytes - 12 * n)
        more = f.read(1)
    digest = hashlib.blake2b(head, digest_size=16)
    digest.update(words)
    _corrupt(path, h, len(head) + len(words), more, digest.hexdigest())
    values, lengths = array("Q"), array("I")
    values.frombytes(head[: 8 * n])
    lengths.frombytes(head[8 * n :])
    del head
    _native(values, lengths)
    return SavedCounts(_table(path, h, values, lengths, words), h.pattern, h.special_tokens, h.summary)


CHUNK = 1 << 18
"""Pre-tokens ``open_counts`` reads at a time: their counts and lengths are 3 MB."""


@dataclass(frozen=True, slots=True)
class CountsStream:
    """A counts file opened to be read a part at a time: what its header says, and its
    tables in order (the whole file read once; ``CorpusError`` from the part where it turns
    out corrupt or truncated, and from the last if its checksum does not match)."""

    pattern: str
    special_tokens: tuple[str, ...]
    summary: CountSummary
    pretokens: int
    tables: TableParts


def open_counts(path: str | os.PathLike[str], chunk: int = CHUNK) -> CountsStream:
    """Open a counts file to read ``chunk`` pre-tokens at a time: a table as large as the
    machine's memory is laid out for training without being held whole beside it."""
    with open_binary(os.fspath(path)) as f:
        h = _read_header(f, path)
    tables = TableParts(_tables(path, h, chunk), h.pretokens, h.payload_bytes - 12 * h.pretokens)
    return CountsStream(h.pattern, h.special_tokens, h.summary, h.pretokens, tables)


def _exactly(f: BinaryIO, k: int, path: str | os.PathLike[str], h: _Header, got: int) -> bytes:
    data = f.read(k)
    if len(data) != k:
        _corrupt(path, h, got + len(data), b"", "")
    return data


def _tables(path: str | os.PathLike[str], h: _Header, chunk: int) -> Iterator[WordTable]:
    """The file's tables of ``chunk`` pre-tokens: the counts, lengths and bytes read side by
    side from three places in the payload, which the checksum covers in order (the counts and
    lengths first, in a pass of their own)."""
    n, name = h.pretokens, os.fspath(path)
    digest = hashlib.blake2b(digest_size=16)
    with open_binary(name) as f:
        f.seek(h.at)
        for done in range(0, 12 * n, 1 << 22):
            digest.update(_exactly(f, min(1 << 22, 12 * n - done), path, h, done))
    with open_binary(name) as counts, open_binary(name) as lengths, open_binary(name) as words:
        counts.seek(h.at)
        lengths.seek(h.at + 8 * n)
        words.seek(h.at + 12 * n)
        got = 12 * n
        for start in range(0, n, chunk):
            k = min(chunk, n - start)
            values, sizes = array("Q"), array("I")
            values.frombytes(_exactly(counts, 8 * k, path, h, got))
            sizes.frombytes(_exactly(lengths, 4 * k, path, h, got))
            _native(values, sizes)
            size = sum(sizes)
            if got + size > h.payload_bytes:
                raise _misfit(path, h)
            text = _exactly(words, size, path, h, got)
            got += size
            digest.update(text)
            yield _table(path, h, values, sizes, text)
        _corrupt(path, h, got, words.read(1), digest.hexdigest())
