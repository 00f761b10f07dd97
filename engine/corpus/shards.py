"""A shard: one piece of counting work, described by plain data, and how to count it.

A corpus's files are planned into shards (``plan_shards``), each counted on its own by
``count_shard`` in whatever process gets it: the shard and the settings are all it needs
(both pickle), and it opens the file itself. The counts of all shards add up exactly to the
counts of the whole corpus, however the work is spread.

- Uncompressed plain text and JSONL: a byte range ``[start, end)`` of the file,
  ``SHARD_BYTES`` long. The range is counted from a cut at or after ``start`` to the cut at
  or after ``end``, where the cut is a function of the file's bytes around that position
  alone (``text_cut``, ``line_cut``): the two shards on either side of a position agree on it
  without seeing each other, so every byte is counted once. A JSONL cut is the next line
  start; a text cut is the first place at or after the position where a pre-token always
  starts (``PreTokenizer.cut_rules``) and no special token could span.
- Parquet: one row group.
- Compressed files: the whole file (a compressed stream cannot be entered in the middle).
- Streams (standard input, a named pipe): the whole stream, read once as it arrives, in
  ``Block``s that count on their own (``stream_blocks``, ``count_block``): whole JSONL lines,
  or plain text cut in bytes where a pre-token always starts (``_last_cut``), so other
  processes can count them.

Plain text under a compiled pattern is counted from its bytes (``Tally.add_utf8``) in
blocks cut the same way; a block that is not valid UTF-8 goes through Python's decoder,
whose error names its byte (or which replaces it, with ``errors="replace"``).

Documents never merge into each other: a plain-text file is one document, a JSONL line or a
Parquet row is one, and each is pre-tokenized on its own, as if a special token stood between.

A compressed file whose data stops before its end marker (a gzip member or a zstd frame
cut short) is an error, as is a Parquet file without its footer: never a part of the corpus
quietly taken for the whole.

Each shard also hashes the bytes it reads (BLAKE2b; for Parquet, the text values): the
digests of the shards in plan order make the digest of the inputs (``inputs_digest``).
"""

from __future__ import annotations

import ctypes
import gzip
import hashlib
import importlib
import io
import json
import os
import re
import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, BinaryIO

from engine.corpus._tally import count_lines
from engine.corpus.pretokenize import PreTokenizer
from engine.corpus.shared_blocks import SharedBlocks
from engine.corpus.sources import JSONL, PARQUET, TEXT, Source, open_binary, optional
from engine.corpus.stages import AddedToken, PatternSpec
from engine.corpus.word_table import WordTable
from engine.errors import CorpusError, not_utf8

MAX_BLOCK = 2 << 20
"""Largest block of a file counted at once: its text is what a process holds beside its tally."""

SHARD_BYTES = 32 << 20
"""The length of a file's byte ranges. A constant, so the plan (and the digest of the inputs)
is the same however many processes count it; long enough that a shard's own pre-token table
costs little beside its counting."""

LINE_BLOCK = 1 << 18
"""How much of a JSONL file (or a plain-text file read for its ids) is read at once:
documents are short, and a block is held three times over while it is cut into lines; and a
block is a unit for the encoding threads."""

PROGRESS_BYTES = 1 << 20
"""Bytes read between two progress reports of a shard."""


@dataclass(frozen=True, slots=True)
class CountSettings:
    """How shards are counted: everything ``count_shard`` needs besides the shard."""

    pattern: PatternSpec = "gpt2"
    special_tokens: tuple[str | AddedToken, ...] = ()
    text_field: str = "text"
    """The JSONL field or Parquet column holding each document."""
    errors: str = "strict"
    """``"strict"``: invalid UTF-8 is an error; ``"replace"``: it becomes U+FFFD."""
    skip_bad_records: bool = False
    """Count and skip a bad JSONL line or Parquet row instead of stopping at it."""
    skip_bad_inputs: bool = False
    """Skip and tell the bad files a directory or a pattern turns up, instead of stopping at
    the first (``sources.find_inputs``)."""
    stdin_format: str = TEXT
    """How standard input (``-``) is read: ``"text"`` or ``"jsonl"``."""
    block_bytes: int = MAX_BLOCK
    """How much of a file is read at once."""
    normalizer: str | None = None
    """The text's normalizer (encoding only: it decides where blocks may be cut)."""

    @property
    def pretokenizer(self) -> PreTokenizer:
        return _pretokenizer(self.pattern, self.special_tokens, self.normalizer)


@lru_cache(maxsize=8)
def _pretokenizer(pattern: PatternSpec, special_tokens: tuple[str | AddedToken, ...], normalizer: str | None) -> PreTokenizer:
    """One compiled pre-tokenizer per process and settings, however many shards it counts."""
    return PreTokenizer(pattern, special_tokens, normalizer)


@dataclass(frozen=True, slots=True)
class Shard:
    """A piece of one input file to count.

    ``start``/``end``: the nominal byte range of an uncompressed text or JSONL file (``end``
    None: to the end of the file); ``row_group``: the Parquet row group; a compressed file or
    a stream is read whole. ``size`` is the bytes it stands for in progress reports (0 for a
    stream: unknown).
    """

    path: str
    format: str
    compression: str | None
    size: int
    start: int = 0
    end: int | None = None
    row_group: int | None = None
    first_row: int = 0
    """Rows of the file before this row group (Parquet), for messages naming a row."""
    stream: bool = False
    """Standard input or a named pipe: only the process that expanded the inputs can read it."""


@dataclass(slots=True)
class ShardCount:
    """What counting a shard gives: pre-token counts, bytes read, bad records skipped, the
    digest of what it read."""

    counts: Counter[bytes]
    bytes_read: int
    bad_records: int
    digest: bytes


def plan_shards(sources: Sequence[Source], settings: CountSettings, shard_bytes: int = SHARD_BYTES) -> list[Shard]:
    """The shards of ``sources``, in order: byte ranges, row groups or whole files."""
    shards: list[Shard] = []
    for src in sources:
        if src.format == PARQUET:
            shards += _row_groups(src, settings.text_field)
        elif src.stream or src.compression or (src.format == TEXT and not settings.pretokenizer.chunked):
            # A custom pattern has no position-determined cut: its files stay whole.
            shards.append(Shard(src.path, src.format, src.compression, src.size, stream=src.stream))
        else:
            starts = range(0, max(src.size, 1), shard_bytes)
            shards += [
                Shard(
                    src.path, src.format, None, min(shard_bytes, src.size - s), s, None if s + shard_bytes >= src.size else s + shard_bytes
                )
                for s in starts
            ]
    return shards


def _row_groups(src: Source, field: str) -> list[Shard]:
    """One shard per row group; the column is checked here, before anything is counted."""
    pq = optional("pyarrow.parquet", "parquet", f"{src.path}: reading Parquet")
    pa = optional("pyarrow", "parquet", f"{src.path}: reading Parquet")
    with open_binary(src.path) as raw:
        _check_footer(raw, src)
        try:
            meta = pq.ParquetFile(raw).metadata
            schema = meta.schema.to_arrow_schema()
            groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
        except (pa.ArrowException, OSError) as e:  # pyarrow's I/O errors are OSErrors
            raise CorpusError(f"{src.path}: not a valid Parquet file ({e})") from None
    if field not in schema.names:
        columns = ", ".join(schema.names[:8])
        raise CorpusError(f'{src.path}: no column "{field}" (it has {columns}): name the text column with --text-field')
    kind = schema.field(field).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise CorpusError(f'{src.path}: column "{field}" holds {kind}, not strings')
    weight = sum(g.total_byte_size for g in groups) or 1
    shards, first_row, given = [], 0, 0
    for i, g in enumerate(groups):
        size = src.size - given if i == len(groups) - 1 else src.size * g.total_byte_size // weight
        shards.append(Shard(src.path, PARQUET, None, size, row_group=i, first_row=first_row))
        first_row += g.num_rows
        given += size
    return shards


PARQUET_MAGIC = b"PAR1"
"""How a Parquet file starts, and ends: after its footer."""


def _check_footer(raw: BinaryIO, src: Source) -> None:
    """``CorpusError`` for a Parquet file that starts as one but does not end as one: cut short."""
    head = raw.read(len(PARQUET_MAGIC))
    raw.seek(max(0, src.size - len(PARQUET_MAGIC)))
    tail = raw.read(len(PARQUET_MAGIC))
    raw.seek(0)
    if head == PARQUET_MAGIC and tail != PARQUET_MAGIC:
        raise CorpusError(
            f"{src.path}: cut short: a Parquet file ends with its footer, and this one stops at byte {src.size:,} without it; "
            "the file is incomplete"
        )


def count_shard(
    shard: Shard, settings: CountSettings, progress: Callable[[int], None] | None = None, tally: PretokenTally | None = None
) -> ShardCount:
    """Count one shard: pre-token counts of its documents (special tokens excluded).

    ``progress`` (optional, in the calling process) is told the bytes read as they are read.
    With ``tally``, the shard's counts are added to it (one tally for many shards) and the
    result's counts are empty. ``CorpusError`` names the file
    (and line or row) of bad input, unless ``settings.skip_bad_records`` and it is a bad record.
    """
    own = PretokenTally(settings.pretokenizer) if tally is None else tally
    with shard_texts(shard, settings, progress, tally=own) as (texts, done):
        for text in texts:
            own.add(text)
            del text
    return ShardCount(own.counter() if tally is None else Counter(), *done())


def source_texts(
    source: Source, settings: CountSettings, progress: Callable[[int], None] | None = None, skipped: Callable[[int], None] | None = None
) -> Iterator[tuple[str, bool]]:
    """The texts of one input file in order, each with whether it ends a document.

    A JSONL line or a Parquet row is a document; a plain-text file is one document, given in
    blocks that pre-tokenize as the whole would (``read_blocks``), so memory stays bounded.
    ``progress`` is told the bytes read, as in ``count_shard``; ``skipped``, the bad records
    skipped (with ``settings.skip_bad_records``) once the file is read.
    """
    for shard in plan_shards([source], settings, shard_bytes=max(source.size, 1)):
        with shard_texts(shard, settings, progress, hashed=False) as (texts, done):
            if source.format != TEXT:
                yield from ((text, True) for text in texts)
            else:
                last = ""
                for i, text in enumerate(texts):
                    if i:
                        yield last, False
                    last = text
                yield last, True
            bad = done()[1]
            if skipped is not None and bad:
                skipped(bad)


def first_text(shard: Shard, settings: CountSettings, chars: int) -> str:
    """The first ``chars`` characters of the shard's first document: something to show."""
    with shard_texts(shard, settings, None, hashed=False) as (texts, _):
        return next(iter(texts), "")[:chars]


@contextmanager
def shard_texts(
    shard: Shard, settings: CountSettings, progress: Callable[[int], None] | None, hashed: bool = True, tally: PretokenTally | None = None
) -> Iterator[tuple[Iterable[str], Callable[[], tuple[int, int, bytes]]]]:
    """The shard's texts (blocks of a plain-text file, or documents), and a function giving
    ``(bytes read, bad records, digest)`` once they are consumed; the digest is empty unless
    ``hashed`` (hashing a plain-text file costs about as much as decoding it). With a
    ``tally``, the JSONL records it can read itself are counted into it, not given."""
    bad = [0]
    if shard.format == PARQUET:
        digest = hashlib.blake2b(digest_size=16)
        with open_binary(shard.path) as raw, _read_errors(shard):
            yield _parquet_documents(raw, shard, settings, digest, bad), lambda: (shard.size, bad[0], digest.digest())
            if progress is not None:
                progress(shard.size)
        return
    pretok = settings.pretokenizer
    with _opened(shard, settings, progress, hashed) as (stream, reader, start):
        count = None if tally is None else tally.utf8_text()
        if shard.format == JSONL:
            texts: Iterable[str] = _jsonl_documents(stream, shard, start, settings, bad, tally)
        elif count is None:
            texts = (text for text, _ in read_blocks(stream, pretok, settings.block_bytes, settings.errors, shard.path, start))
        else:  # in blocks cut in bytes, counted from their bytes
            blocks = _placed(_text_blocks(stream, pretok, settings.block_bytes), start)
            texts = (text for block in blocks for text in _block_texts(block, shard, settings, count))
        yield texts, lambda: (reader.flush(), bad[0], b"" if reader.hash is None else reader.hash.digest())


@contextmanager
def shard_text_blocks(
    shard: Shard, settings: CountSettings, progress: Callable[[int], None] | None
) -> Iterator[tuple[Iterator[tuple[bytes, int]], Callable[[bytes, int], list[str]]]]:
    """A plain-text shard's bytes for a reader that encodes UTF-8 itself: blocks of about
    ``settings.block_bytes`` or ``LINE_BLOCK``, the smaller (as a JSONL file's: in blocks of
    1 MB, zh-xiyouji was two units for two threads, and en-mix-6m seven), that each
    pre-tokenize as within the whole (``_text_blocks``; the settings' pre-tokenizer must be
    one the compiled code runs, as for ``PretokenTally.utf8_text``), each with the byte of
    the file it starts at; and what reads a block as ``shard_texts`` would, given that byte
    (its texts, decoded with the settings' errors, a ``CorpusError`` naming the byte), for
    one that is not valid UTF-8."""

    def blocks() -> Iterator[tuple[bytes, int]]:
        for block in _placed(_text_blocks(stream, settings.pretokenizer, min(settings.block_bytes, LINE_BLOCK)), start):
            assert isinstance(block.data, bytes)
            yield block.data, block.offset
        reader.flush()  # the last bytes read, told to progress

    def texts(data: bytes, offset: int) -> list[str]:
        return list(_block_texts(Block(data, offset), shard, settings, None))

    with _opened(shard, settings, progress, False) as (stream, reader, start):
        yield blocks(), texts


@contextmanager
def shard_jsonl_blocks(
    shard: Shard, settings: CountSettings, progress: Callable[[int], None] | None
) -> Iterator[tuple[Iterator[tuple[bytes, int]], Callable[[bytes, int], str | None], Callable[[], int]]]:
    """A JSONL shard's lines for a reader that reads the lines it can itself and hands the
    others back (``Tokenizer.encode_jsonl_blocks``): blocks of whole lines, each with the
    byte it starts at in the shard; what reads the line starting at byte ``offset`` as
    ``shard_texts`` would (its text, or None for a blank line or a record skipped; a
    ``CorpusError`` naming the line, its number counted only then), from any thread; and
    the records skipped so far."""
    bad = [0]
    lock = threading.Lock()

    def record(line: bytes, offset: int) -> str | None:
        mine = [0]
        text = _record_text(line, settings.text_field, settings, mine, shard, start + offset, 0)
        if mine[0]:
            with lock:
                bad[0] += mine[0]
        return text

    def blocks() -> Iterator[tuple[bytes, int]]:
        offset = 0
        for block in _line_blocks(stream, min(settings.block_bytes, LINE_BLOCK)):
            yield block, offset
            offset += len(block)
        reader.flush()  # the last bytes read, told to progress

    with _opened(shard, settings, progress, False) as (stream, reader, start):
        yield blocks(), record, lambda: bad[0]


@dataclass(frozen=True, slots=True)
class Block:
    """A stretch of a stream that counts on its own as within the whole stream, by any
    process (``count_block``): whole JSONL lines, or plain text cut where a pre-token always
    starts (``_last_cut``), as bytes; or, under a pattern with no such cut, its text as read
    here."""

    data: bytes | memoryview | str
    offset: int = 0
    """The byte of the stream its bytes start at, for messages (a text's were found as it
    was read)."""
    lines_before: int = 0
    """The lines of the stream before it, for messages."""
    slot: int = -1
    """The slot of ``SharedBlocks`` its bytes are in, or -1 (``data`` is its own)."""


@contextmanager
def stream_blocks(
    shard: Shard, settings: CountSettings, progress: Callable[[int], None] | None, shared: SharedBlocks | None = None
) -> Iterator[tuple[Iterator[Block], Callable[[], tuple[int, bytes]]]]:
    """A stream's ``Block``s as it is read, and what gives ``(bytes read, digest)`` once they
    are. Its bytes are read and hashed here, and parsed where each block is counted. With
    ``shared``, JSONL and plain text are read into its slots (a block's slot is to be given
    back once it is counted)."""
    pretok = settings.pretokenizer
    with _opened(shard, settings, progress, True) as (stream, reader, _):
        blocks: Iterator[Block]
        if shard.format == JSONL and shared is not None:
            blocks = _slot_blocks(stream, _last_line_end, settings.block_bytes, shared, numbered=True)
        elif shard.format == JSONL:
            blocks = _numbered(_line_blocks(stream, settings.block_bytes))
        elif pretok.chunked and shared is not None:
            blocks = _slot_blocks(stream, lambda data: _last_cut(data, pretok), settings.block_bytes, shared)
        elif pretok.chunked:
            blocks = _placed(_text_blocks(stream, pretok, settings.block_bytes))
        else:
            blocks = (Block(text) for text, _ in read_blocks(stream, pretok, settings.block_bytes, settings.errors, shard.path))
        digest = reader.hash
        assert digest is not None  # hashed
        yield blocks, lambda: (reader.flush(), digest.digest())


def count_block(block: Block, shard: Shard, settings: CountSettings, tally: PretokenTally) -> int:
    """Count a stream's ``block`` into ``tally``, as ``count_shard`` would within the whole;
    the bad records it skipped."""
    if isinstance(block.data, str):
        tally.add(block.data)
        return 0
    bad = [0]
    if shard.format == JSONL:  # read whole: a block of a stream is no longer than a file's
        texts: Iterable[str] = _jsonl_block(block.data, shard, 0, settings, bad, tally, [block.lines_before])
    else:
        texts = _block_texts(block, shard, settings, tally.utf8_text())
    for text in texts:
        tally.add(text)
        del text
    return bad[0]


def _numbered(blocks: Iterator[bytes]) -> Iterator[Block]:
    """Blocks of whole JSONL lines, each with its byte and the lines before it."""
    offset = lines = 0
    for data in blocks:
        yield Block(data, offset, lines)
        offset += len(data)
        lines += count_lines(data)


def _block_texts(block: Block, shard: Shard, settings: CountSettings, count: Callable[[bytes | memoryview], bool] | None) -> Iterator[str]:
    """The texts of a block of plain text from ``_text_blocks``: none if ``count`` took it
    from its bytes (``PretokenTally.utf8_text``), else decoded as ``read_blocks``
    decodes (its errors naming their byte of the file)."""
    assert not isinstance(block.data, str)
    if count is None or not count(block.data):
        read = read_blocks(io.BytesIO(block.data), settings.pretokenizer, settings.block_bytes, settings.errors, shard.path, block.offset)
        yield from (text for text, _ in read)


def _placed(blocks: Iterator[bytes], offset: int = 0) -> Iterator[Block]:
    """Blocks of plain text, each with its byte, the first at ``offset``."""
    for data in blocks:
        yield Block(data, offset)
        offset += len(data)


def _slot_blocks(
    f: Any, last_cut: Callable[[bytes], int], block_size: int, shared: SharedBlocks, numbered: bool = False
) -> Iterator[Block]:
    """A stream as ``_text_blocks`` or ``_line_blocks`` cuts it (``last_cut``: where a
    block of it may end, 0 if nowhere), each block of about ``block_size`` bytes read into a
    slot of ``shared`` (of at least twice that size), where it stays: the bytes after its
    cut start the next slot. A stretch with no cut in a full slot is held in pieces, and the
    block it ends is a ``bytes`` of its own. ``numbered``: each block with the lines before
    it, as ``_numbered`` gives them."""
    carry = b""
    held: list[bytes] = []  # a stretch with no cut, from full slots
    offset = lines = 0
    while True:
        slot = shared.take()
        view = shared.slot(slot)
        view[: len(carry)] = carry
        want = min(len(view), len(carry) + block_size)
        filled = len(carry) + _fill(f, view[len(carry) : want])
        ended = filled < want
        cut = filled if ended else _view_cut(view, filled, last_cut)
        if not cut and not ended:
            held.append(bytes(view[:filled]))
            carry = b""
            shared.give(slot)
            continue
        carry = bytes(view[cut:filled])
        if held:  # the stretch ends at the cut: a block of its own
            held.append(bytes(view[:cut]))
            shared.give(slot)
            data = b"".join(held)
            held = []
            yield Block(data, offset, lines)
            offset += len(data)
            lines += count_lines(data) if numbered else 0
        elif cut:
            yield Block(view[:cut], offset, lines, slot)
            offset += cut
            lines += count_lines(view[:cut]) if numbered else 0
        else:
            shared.give(slot)
        if ended:
            return


def _fill(f: Any, view: memoryview) -> int:
    """Read ``f`` into ``view`` until it is full or ``f`` ends; the bytes read."""
    done = 0
    while done < len(view) and (n := f.readinto(view[done:])):
        done += n
    return done


CUT_WINDOW = 1 << 16
"""How far back from a block's end a cut is looked for first: one nearly always lies there."""


def _view_cut(view: memoryview, filled: int, last_cut: Callable[[bytes], int]) -> int:
    """``last_cut`` of ``view[:filled]``, from a copy of its last ``CUT_WINDOW`` bytes when
    one lies there. The same cut: whether a place is one depends on the few bytes around it."""
    start = max(0, filled - CUT_WINDOW)
    if start and (cut := last_cut(bytes(view[start:filled]))):
        return start + cut
    return last_cut(bytes(view[:filled]))


def _last_line_end(data: bytes) -> int:
    """Where the last whole line of ``data`` ends (0 if none)."""
    return data.rfind(b"\n") + 1


def text_pieces(data: bytes, pretok: PreTokenizer, size: int) -> Iterator[tuple[memoryview, bool]]:
    """A text's UTF-8 in pieces of about ``size`` bytes, views of it, each ending where a
    pre-token always starts, as a file's blocks of that size are cut (``_text_blocks``), so
    each encodes as within the whole; each with whether it is the last (there is at least
    one), made as they are asked for. Read and joined as a file's blocks, the 2.4 MB text of
    en-mix-6m's last line was copied twice more: 2.1 ms and 690 pages new to a first call."""
    view = memoryview(data)
    start = 0
    for stop in range(size, len(data), size):  # each block's end but the last's
        if cut := _last_cut(data, pretok, stop - size, stop):
            yield view[start:cut], False
            start = cut
    yield view[start:], True


def _text_blocks(f: Any, pretok: PreTokenizer, block_size: int) -> Iterator[bytes]:
    """A plain-text stream in blocks of about ``block_size`` bytes, each ending where a
    pre-token always starts (``_last_cut``), so that each pre-tokenizes on its own as within
    the whole. A stretch with no cut is held in pieces and joined once one comes. The
    stream's last read is not cut (a read ahead tells it): its tail was a block of its own,
    and a file of one block went to two threads as a block and a few bytes, 0.84x one's
    speed."""
    held: list[bytes | memoryview] = []
    data = f.read(block_size)
    while data:
        following = f.read(block_size)
        cut = _last_cut(data, pretok) if following else 0
        if not cut:
            held.append(data)
            data = following
            continue
        held.append(memoryview(data)[:cut])  # copied once, by the join
        yield b"".join(held)
        held = [data[cut:]]
        data = following
    if rest := b"".join(held):
        yield rest


@contextmanager
def _opened(
    shard: Shard, settings: CountSettings, progress: Callable[[int], None] | None, hashed: bool
) -> Iterator[tuple[Any, _Reader, int]]:
    """A text or JSONL shard's bytes: a stream of them (decompressed), the reader under it
    (bytes read, their digest), and the byte the shard starts at in its file; errors reading
    them become ``CorpusError``."""
    with open_binary(shard.path) as raw:
        if shard.stream:
            _widen_pipe(raw)
        if shard.compression:
            start, reader = 0, _Reader(raw, None, progress, hashed)
            stream: Any = _decompressed(reader, shard)
        else:
            pretok = settings.pretokenizer
            cut = line_cut if shard.format == JSONL else lambda f, pos: text_cut(f, pos, pretok)
            start = cut(raw, shard.start)
            stop = None if shard.end is None else cut(raw, shard.end)
            if not shard.stream:  # which cannot seek, and is read whole from where it is
                raw.seek(start)
            reader = stream = _Reader(raw, None if stop is None else max(0, stop - start), progress, hashed, shard.stream)
        with _read_errors(shard, reader, stream):
            yield stream, reader, start


PIPE_BYTES = 1 << 20
"""What a stream's pipe is asked to hold, where the system lets it: at the usual 64 KB the
reader wakes, and the writer waits, every 64 KB (300 MB read from ``cat`` in 2 MB blocks took
1.0 s, and 0.79 s at 1 MB)."""


def _widen_pipe(f: BinaryIO) -> None:
    """Ask the pipe ``f`` reads to hold ``PIPE_BYTES`` (Linux); anything else stays as it is."""
    try:
        import fcntl

        fcntl.fcntl(f.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (ImportError, AttributeError, OSError, ValueError):  # not Linux, not a pipe, or refused
        pass


def inputs_digest(digests: Iterable[bytes]) -> str:
    """The digest of the inputs from the digests of their shards in plan order."""
    h = hashlib.blake2b(digest_size=16)
    for d in digests:
        h.update(d)
    return h.hexdigest()


# -- cuts -------------------------------------------------------------------------------------


def line_cut(f: BinaryIO, pos: int) -> int:
    """The first line start at or after byte ``pos`` (the end of the file if none)."""
    if pos <= 0:
        return 0
    f.seek(pos - 1)
    at = pos - 1
    while True:
        data = f.read(1 << 16)
        if not data:
            return at
        i = data.find(b"\n")
        if i >= 0:
            return at + i + 1
        at += len(data)


def text_cut(f: BinaryIO, pos: int, pretok: PreTokenizer) -> int:
    """The first byte offset at or after ``pos`` where a plain-text file can be cut without
    changing its pre-tokens (the end of the file if none).

    A cut goes before a space or newline that ``pretok.cut_rules`` accept given the
    character before it, where no occurrence of a special token spans the cut (so however
    the special tokens pair up from the start of the file, none is cut). Everything looked
    at lies within a few characters of the cut, so the result depends on ``pos`` and the
    bytes there alone.
    """
    if pos <= 0:
        return 0
    rules, specials, reach = _cut_terms(pretok)
    back = reach + 4  # and the character before the cut
    origin = max(0, pos - back)
    f.seek(origin)
    data = f.read(pos - origin + (1 << 16))
    eof = len(data) < pos - origin + (1 << 16)
    i = pos - origin  # where the search goes on in ``data``
    while True:
        j = min((j for j in (data.find(c, i) for c in rules) if j >= 0), default=-1)
        if j < 0 or (j + reach > len(data) and not eof):  # read on (and keep some context)
            if eof:
                return origin + len(data)
            i = len(data) if j < 0 else j
            keep = max(0, i - back)
            more = f.read(max(1 << 16, len(data)))
            eof = not more
            origin, data, i = origin + keep, data[keep:] + more, i - keep
            continue
        if _cut_ok(data, j, rules[data[j : j + 1]], specials):
            return origin + j
        i = j + 1


def _cut_terms(pretok: PreTokenizer) -> tuple[dict[bytes, Callable[[str], bool]], list[bytes], int]:
    """What ``text_cut`` looks for: the bytes of ``cut_rules``' characters, each with its
    test, the special tokens' bytes, and how far a special token stretches either side of a
    cut."""
    rules = {char.encode(): bad_before for char, bad_before in pretok.cut_rules}
    specials = [s.encode("utf-8") for s in pretok.special_tokens]
    return rules, specials, max(map(len, specials), default=1)


_INDENT = re.compile(rb"(?:[ \t\x0b\x0c]|\xe3\x80\x80)*")
"""A line's indent, in UTF-8: spaces, tabs and ideographic spaces."""


def _last_cut(data: bytes, pretok: PreTokenizer, start: int = 0, stop: int | None = None) -> int:
    """The last place in ``data[start:stop]`` where a block of text can end, told from it
    and far enough from both ends to see every special token that could span it (0 if none):
    where ``text_cut`` would cut, or at the start of a line, as ``PreTokenizer.safe_cut``
    also cuts: under GPT-2, after a newline that follows no whitespace, before a character
    that is none; under the others, before the line's first character that is no
    whitespace, after its indent (not a ``/`` right after the newline, nor a special token
    after an indent). Lines keep a text without spaces (Chinese, whose lines end in a full
    stop) in blocks of about the size asked for."""
    rules, specials, reach = _cut_terms(pretok)
    stop = len(data) if stop is None else stop
    seen = stop - reach + 1
    low = start + reach + 4
    if seen <= low:  # too short to see around any cut
        return 0
    lone = pretok.family == "gpt2"  # a space run gives its last to what follows
    # The candidates from the last down, a rule's and a line's start merged, the first that
    # holds taken: each kind walked apart, Chinese prose (no newline after a letter) had each
    # line's newline tried before the cut at a line's start nearer the end was.
    last = {c: data.rfind(c, low, seen) for c in rules}  # each rule's last candidate
    n = data.rfind(b"\n", low, seen - 1)  # a line starting at n + 1
    while (j := max(last.values(), default=-1)) > 0 or n >= 0:
        if n >= 0 and n + 1 >= j:
            if _line_cut_ok(data, n, stop, seen, lone, specials):
                return n + 1
            n = data.rfind(b"\n", low, n)
            continue
        c = data[j : j + 1]
        if _cut_ok(data, j, rules[c], specials):
            return j
        last[c] = data.rfind(c, low, j)
    return 0


def _line_cut_ok(data: bytes, n: int, stop: int, seen: int, lone: bool, specials: list[bytes]) -> bool:
    """Whether a block may end at the start of the line after the newline ``data[n]``, the
    block ending at ``stop`` and seeing special tokens up to ``seen``: see ``_last_cut``
    (``lone``: GPT-2's rules)."""
    indent = _INDENT.match(data, n + 1, stop)
    assert indent is not None  # it may be empty
    at = n + 1 if lone else indent.end()
    after = data[at : min(at + 4, stop)].decode("utf-8", "surrogateescape")[:1]
    if at == n + 1:
        fits = after != "/" and (not lone or not _space_before(data, n))
    else:
        fits = at < seen and not any(data.startswith(s, at) for s in specials)
    return bool(after) and not after.isspace() and fits and not _spanned(data, n + 1, specials)


def _char_before(data: bytes, j: int) -> str:
    """The character ending just before ``data[j]`` ("" at the start; an invalid byte as a
    surrogate)."""
    lead = j - 1
    while lead > 0 and j - lead < 4 and data[lead] & 0xC0 == 0x80:
        lead -= 1
    return data[max(lead, 0) : j].decode("utf-8", "surrogateescape")[-1:]


def _space_before(data: bytes, j: int) -> bool:
    before = _char_before(data, j)
    return not before or before.isspace()


def _spanned(data: bytes, j: int, specials: list[bytes]) -> bool:
    """Whether an occurrence of a special token spans a cut before ``data[j]``: it starts less
    than its length before it."""
    return any(0 <= data.find(s, max(0, j - len(s) + 1), j + len(s) - 1) < j for s in specials)


def _cut_ok(data: bytes, j: int, bad_before: Callable[[str], bool], specials: list[bytes]) -> bool:
    """Whether a cut before ``data[j]`` is certain: see ``text_cut``."""
    before = _char_before(data, j)
    return bool(before) and not bad_before(before) and not _spanned(data, j, specials)


# -- reading ----------------------------------------------------------------------------------


class _Reader:
    """A file read up to ``limit`` bytes, hashing what it reads (if ``hashed``) and reporting how much.

    A ``stream``'s reads are reported as its bytes arrive, not once a whole block has come:
    a slow producer's progress moves as it writes."""

    def __init__(
        self, f: BinaryIO, limit: int | None, progress: Callable[[int], None] | None, hashed: bool = True, stream: bool = False
    ) -> None:
        self.f, self.left, self.progress, self.stream = f, limit, progress, stream
        self.hash = hashlib.blake2b(digest_size=16) if hashed else None
        self.done = 0
        self.reported = 0

    def read(self, n: int = -1) -> bytes:
        if self.left is not None:
            n = self.left if n < 0 else min(n, self.left)
        if not (self.stream and n > 0 and isinstance(self.f, io.BufferedReader)):
            return self._read(self.f.read(n))
        parts, wanted = [], n
        while wanted and (part := self._read(self.f.read1(wanted))):  # read1: what has arrived, up to wanted
            parts.append(part)
            wanted -= len(part)
        return b"".join(parts)

    def readinto(self, view: memoryview) -> int:
        """Read into ``view`` (a stream: what has arrived, some unless it has ended); the
        bytes read."""
        n = len(view) if self.left is None else min(len(view), self.left)
        if n <= 0:
            return 0
        if isinstance(self.f, io.BufferedReader):
            k = (self.f.readinto1 if self.stream else self.f.readinto)(view[:n])
        else:
            data = self.f.read(n)
            k = len(data)
            view[:k] = data
        self._took(view[:k])
        return k

    def _read(self, data: bytes) -> bytes:
        self._took(data)
        return data

    def _took(self, data: bytes | memoryview) -> None:
        """Hash, count and report bytes read."""
        if self.hash is not None:
            self.hash.update(data)
        self.done += len(data)
        if self.left is not None:
            self.left -= len(data)
        if self.progress is not None and self.done - self.reported >= PROGRESS_BYTES:
            self.flush()

    def readable(self) -> bool:
        return True

    def flush(self) -> int:
        """Report what is not reported yet; the bytes read."""
        if self.progress is not None and self.done > self.reported:
            self.progress(self.done - self.reported)
        self.reported = self.done
        return self.done


def _zstd(path: str) -> Any:
    """Python's own zstd (3.14 on), else its backport."""
    try:
        return importlib.import_module("compression.zstd")
    except ImportError:
        return optional("backports.zstd", "zstd", f"{path}: reading zstd", package="backports.zstd")


def _decompressed(reader: _Reader, shard: Shard) -> Any:
    """The decompressed stream of a compressed shard: ``EOFError`` where its data stops
    before an end marker, however many gzip members or zstd frames came before."""
    # typeshed's reader protocol also asks for seek(), which these readers only call to
    # rewind: this stream is read forward once, so _Reader has none.
    if shard.compression == "gzip":
        return gzip.GzipFile(fileobj=reader, mode="rb")  # type: ignore[call-overload]
    return _zstd(shard.path).ZstdFile(reader)


@contextmanager
def _read_errors(shard: Shard, reader: _Reader | None = None, stream: Any = None) -> Iterator[None]:
    """A file that cannot be read, a compressed file that is corrupt or cut short: one line."""
    try:
        yield
    except EOFError as e:
        if reader is None or not shard.compression:
            raise CorpusError(f"{shard.path}: cannot read it ({e})") from None
        raise CorpusError(
            f"{shard.path}: cut short: its {shard.compression} data stops unfinished at byte {reader.done:,}, the end of the file "
            f"({stream.tell():,} bytes decompressed); the file is incomplete"
        ) from None
    except (OSError, zlib.error) as e:
        raise CorpusError(f"{shard.path}: cannot read it ({e})") from None
    except Exception as e:
        if type(e).__module__.startswith("pyarrow"):
            raise CorpusError(f"{shard.path}: not a valid Parquet file ({e})") from None
        if shard.compression == "zstd" and isinstance(e, _zstd(shard.path).ZstdError):
            raise CorpusError(f"{shard.path}: not a valid zstd file ({e})") from None
        raise


def _utf8_tail(data: bytes) -> int:
    """Length of an incomplete UTF-8 sequence at the end of ``data`` (0 if none)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return back if back < need else 0
    return 0


def _take(pieces: list[str]) -> str:
    """The pieces joined, and the list emptied: the text is then held only where it is used."""
    text = "".join(pieces)
    pieces.clear()
    return text


def read_blocks(
    f: Any, pretok: PreTokenizer, block_size: int = MAX_BLOCK, errors: str = "strict", name: str = "", offset: int = 0
) -> Iterator[tuple[str, int]]:
    """Yield ``(text, end offset)`` blocks of a binary stream that can be pre-tokenized
    independently; ``offset`` is where the stream starts in the file ``name``, for messages.

    Text with no cut in it (a line without spaces: one long pre-token, or a run of them) is
    held in pieces, and only its last few characters are looked at again with the next block:
    with special tokens cut out as plain strings, a cut or a special token can only appear
    there (``safe_cut`` found none before them, and no special token is longer than
    ``keep // 2``), so a line of any length is read in time proportional to its length, and
    joined once, when it ends.
    """
    pending = b""
    carry = ""
    held: list[str] = []  # text before ``carry`` since the last cut, known to hold none
    keep = 2 * max(map(len, pretok.special_tokens), default=1) + 2
    while True:
        data = f.read(block_size)
        eof = not data
        raw = pending + data
        tail = 0 if eof else _utf8_tail(raw)
        body, pending = (raw[: len(raw) - tail], raw[len(raw) - tail :]) if tail else (raw, b"")
        try:
            text = carry + body.decode("utf-8", errors)
        except UnicodeDecodeError as e:
            raise CorpusError(f"{not_utf8(name, offset + e.start)} (use --errors replace to read it anyway)") from None
        offset += len(body)
        if eof:
            held.append(text)
            del text
            if any(held):
                yield _take(held), offset
            return
        cut = pretok.safe_cut(text)
        if cut:
            held.append(text[:cut])
            carry = text[cut:]
            del text
            yield _take(held), offset
        elif pretok.plain and len(text) > keep:
            held.append(text[:-keep])
            carry = text[-keep:]
        else:
            carry = text


def _line_blocks(f: Any, block_size: int) -> Iterator[bytes]:
    """A binary stream as blocks of whole lines: each ends with a newline, but the last. A
    line longer than a block is held in pieces and joined once, when it ends; a block that
    goes on with the last one's tail is copied once, by the join (sliced first, en-mix-6m's
    JSONL was copied twice over)."""
    held: list[bytes | memoryview] = []  # the line that the next block goes on with
    while data := f.read(block_size):
        cut = data.rfind(b"\n") + 1
        if not cut:
            held.append(data)
            continue
        if held:
            held.append(memoryview(data)[:cut])
            yield b"".join(held)
            held.clear()
        else:
            yield data if cut == len(data) else data[:cut]
        if cut < len(data):
            held.append(data[cut:])
        del data
    if line := b"".join(held):
        yield line


_JSON_KINDS = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


_SURROGATE = re.compile("[\ud800-\udfff]")
"""Half of a surrogate pair alone, which a JSON escape can write and no UTF-8 can hold."""
_scan_json: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]
"""The scanner ``json.loads`` runs (C where there is one), made by the decoder's ``__init__``."""
_JSON_SPACE = " \t\n\r"


def _json_value(line: str) -> Any:
    """``json.loads(line)``, for a line that is one value without its per-call work: the C
    scanner that ``json.loads`` runs, from the line's start. Where that does not take the
    whole line, ``json.loads`` itself gives the value or its error."""
    try:
        value, end = _scan_json(line, 0)
    except (StopIteration, ValueError):  # nothing starts there, or it is not valid
        return json.loads(line)
    if end != len(line) and line[end:].strip(_JSON_SPACE):
        return json.loads(line)  # "Extra data"
    return value


def _jsonl_documents(
    f: Any, shard: Shard, start: int, settings: CountSettings, bad: list[int], tally: PretokenTally | None = None, number: int = 0
) -> Iterator[str]:
    """The texts of the JSONL stream's records, ``number`` lines after byte ``start`` of the
    file (for messages). With a ``tally`` that can (``jsonl_field``), the records it reads in
    C are counted into it and only the others' texts given."""
    lines = [number]
    for block in _line_blocks(f, min(settings.block_bytes, LINE_BLOCK)):
        yield from _jsonl_block(block, shard, start, settings, bad, tally, lines)


def _jsonl_block(
    block: bytes | memoryview,
    shard: Shard,
    start: int,
    settings: CountSettings,
    bad: list[int],
    tally: PretokenTally | None,
    lines: list[int],
) -> Iterator[str]:
    """The texts of a block of whole JSONL lines, as ``_jsonl_documents`` gives them;
    ``lines[0]``: the lines before it, and after it once it is read."""
    field = settings.text_field
    fast = tally.jsonl_field(field) if tally is not None else None
    at = 0
    while at < len(block):
        if fast is not None:
            at, read = fast(block, at)
            lines[0] += read
            if at == len(block):
                break
        if isinstance(block, memoryview):  # a line left to Python: the rest of the block as bytes
            block, at = bytes(block[at:]), 0
        end = block.find(b"\n", at)
        end = len(block) if end < 0 else end
        line, at = block[at:end], end + 1
        lines[0] += 1
        if (text := _record_text(line, field, settings, bad, shard, start, lines[0] - 1)) is not None:
            yield text


def _record_text(line: bytes, field: str, settings: CountSettings, bad: list[int], shard: Shard, start: int, number: int) -> str | None:
    """The text of JSONL line ``number`` of the shard (None for a blank or skipped one)."""
    if not line.strip():
        return None
    try:
        record = _json_value(line.decode("utf-8", settings.errors))
    except UnicodeDecodeError:
        problem = "not valid UTF-8 (use --errors replace to read it anyway)"
    except ValueError as e:
        problem = f"not valid JSON ({getattr(e, 'msg', e)})"
    else:
        if not isinstance(record, dict) or field not in record:
            problem = f'no "{field}" field' + (
                "" if isinstance(record, dict) else f" (the line holds {_JSON_KINDS.get(type(record), 'a value')})"
            )
        elif not isinstance(text := record[field], str):
            problem = f'"{field}" is {_JSON_KINDS.get(type(text), "a value")}, not a string'
        elif b"\\u" not in line or not (lone := _SURROGATE.search(text)):  # only an escape can write one
            return text
        elif settings.errors != "strict":
            return _SURROGATE.sub("\ufffd", text)
        else:
            problem = (
                f'"{field}" holds a lone surrogate (\\u{ord(lone.group()):04x}), which is not UTF-8'
                " (use --errors replace to read it anyway)"
            )
    if settings.skip_bad_records:
        bad[0] += 1
        return None
    where = _line_number(shard.path, start) + number
    raise CorpusError(f"{shard.path}: line {where:,}: {problem}; --skip-bad-records skips such records")


def _line_number(path: str, offset: int) -> int:
    """The number of the line starting at byte ``offset`` (only looked up for a message)."""
    if offset == 0:
        return 1
    newlines = 0
    with open_binary(path) as f:
        left = offset
        while left > 0 and (data := f.read(min(left, 1 << 20))):
            newlines += count_lines(data)
            left -= len(data)
    return newlines + 1


def _parquet_documents(raw: BinaryIO, shard: Shard, settings: CountSettings, digest: Any, bad: list[int]) -> Iterator[str]:
    pq = optional("pyarrow.parquet", "parquet", f"{shard.path}: reading Parquet")
    pa = optional("pyarrow", "parquet", f"{shard.path}: reading Parquet")
    field = settings.text_field
    batches = pq.ParquetFile(raw).iter_batches(batch_size=4096, row_groups=[shard.row_group], columns=[field])
    row = shard.first_row
    for batch in batches:
        column = batch.column(0)
        # As bytes (the same buffers): a string column may still hold invalid UTF-8.
        for data in column.cast(pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary()).to_pylist():
            row += 1
            if data is None:
                problem = "is null"
            else:
                try:
                    text = data.decode("utf-8", settings.errors)
                except UnicodeDecodeError:
                    problem = "is not valid UTF-8 (use --errors replace to read it anyway)"
                else:
                    digest.update(len(data).to_bytes(8, "little"))
                    digest.update(data)
                    yield text
                    continue
            if settings.skip_bad_records:
                bad[0] += 1
                continue
            raise CorpusError(f'{shard.path}: row {row:,}: "{field}" {problem}; --skip-bad-records skips such records')


# -- counting ---------------------------------------------------------------------------------


def _on_glibc() -> bool:
    """Whether this process runs on glibc, whose malloc the functions below tune: other C
    libraries lack those functions or their constants, and on Windows (no ``os.confstr``)
    ``ctypes.CDLL(None)`` raises TypeError, which would stop this module from importing."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


def _glibc(name: str) -> Callable[..., object] | None:
    """glibc's function ``name`` from this process, or None where glibc is not."""
    if not _on_glibc():
        return None
    try:
        return ctypes.CDLL(None)[name]
    except (OSError, AttributeError):
        return None


_malloc_trim = _glibc("malloc_trim")
_mallopt = _glibc("mallopt")
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024
"""glibc's start value. Left alone, glibc raises it as large blocks are freed (counting
frees many), and later large arrays then come from the heap, where growing one copies it
and what it leaves behind stays resident: the peak would vary run to run by MBs."""


def trim_heap() -> None:
    """glibc's ``malloc_trim(0)``, or nothing where there is none.

    Counting frees a block's text, its split parts and a result table for every block;
    glibc keeps such freed memory in its heaps (one per thread that touched it), so without
    a trim the processes' resident size grows with the file, not with the distinct
    pre-tokens.
    """
    if _malloc_trim is not None:
        _malloc_trim(0)


def keep_mmap_threshold() -> None:
    """Keep glibc's mmap threshold at ``MMAP_THRESHOLD`` in this process (and the workers it
    forks), from before counting to the end of training: large arrays get mappings of their
    own, which realloc grows in place and free gives back whole. Nothing where glibc is not."""
    if _mallopt is not None:
        _mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


SPILL_BYTES = 24
"""What writing a tally out as a run holds beside it, a pre-token: its sort's order (40
bytes) less the index it lets go first (at least 16)."""


class PretokenTally:
    """Pre-token counts of texts, each pre-tokenized on its own, kept in C (``Tally``): a
    worker keeps one for all the shards it counts. With ``spill_over``, a tally grown past
    its budget is handed on (and emptied) between texts, or blocks of JSONL lines."""

    def __init__(self, pretok: PreTokenizer) -> None:
        self.pretok = pretok
        self.tally = pretok.new_tally()
        self.since_trim = 0
        self.budget: int | None = None
        self.spill: Callable[[], None] = lambda: None

    def spill_over(self, budget: int, spill: Callable[[], None]) -> None:
        """Call ``spill`` after a text that leaves the tally holding more than ``budget``
        bytes; it writes the counts somewhere and calls ``reset``."""
        self.budget, self.spill = budget, spill

    def add(self, text: str) -> None:
        self.pretok.tally(text, self.tally)
        self._added(len(text))

    def _added(self, size: int) -> None:
        """After ``size`` more characters or bytes were counted: the heap trimmed now and then,
        the tally spilled once over its budget."""
        self.since_trim += size
        if self.since_trim >= MAX_BLOCK // 2:
            trim_heap()
            self.since_trim = 0
        if self.budget is not None and self.tally.nbytes + SPILL_BYTES * len(self.tally) > self.budget:
            self.spill()

    def jsonl_field(self, field: str) -> Callable[[bytes | memoryview, int], tuple[int, int]] | None:
        """What counts a block of JSONL lines from a byte on, straight from their bytes
        (``Tally.add_jsonl``), up to the first line it leaves to the caller: ``(where that
        starts, the lines before it)``. None where the texts must go through Python: a
        pattern that runs through ``regex``, added tokens not cut out as plain strings, a
        normalizer."""
        if self.pretok.family is None or not self.pretok.plain:
            return None
        key = field.encode("utf-8")
        specials = tuple(s.encode("utf-8") for s in self.pretok.special_tokens)

        def count(block: bytes | memoryview, at: int) -> tuple[int, int]:
            stop, lines = self.tally.add_jsonl(block, at, key, specials)
            self._added(stop - at)
            return stop, lines

        return count

    def utf8_text(self) -> Callable[[bytes | memoryview], bool] | None:
        """What counts a plain text straight from its UTF-8 bytes (``Tally.add_utf8``), or says
        they are not valid UTF-8, counting nothing. None where the texts must go through
        Python, as for ``jsonl_field``."""
        if self.pretok.family is None or not self.pretok.plain:
            return None
        specials = tuple(s.encode("utf-8") for s in self.pretok.special_tokens)

        def count(data: bytes | memoryview) -> bool:
            if not self.tally.add_utf8(data, specials):
                return False
            self._added(len(data))
            return True

        return count

    def reset(self) -> None:
        """Start again from no counts (what the old tally held goes back to the system)."""
        self.tally = self.pretok.new_tally()
        trim_heap()

    def table(self, by_word: bool = False) -> WordTable:
        """The counts of everything added so far, in the order first seen or ``by_word``."""
        return WordTable.packed(*self.tally.table(by_word))

    def counter(self) -> Counter[bytes]:
        """The counts of everything added so far, as a ``Counter``."""
        return Counter(self.tally.counts())


def count_texts(texts: Iterable[str], pretok: PreTokenizer) -> Counter[bytes]:
    """Pre-token counts of several texts, each pre-tokenized on its own."""
    tally = PretokenTally(pretok)
    for text in texts:
        tally.add(text)
        del text
    return tally.counter()
