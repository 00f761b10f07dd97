"""A dataset: the documents of a corpus encoded into one flat file of token ids.

``encode_dataset`` reads the input files in order, document by document
(``shards.source_texts``), encodes them in worker threads
(``Tokenizer.encode_packed_batches``: the compiled encoder encodes and packs a unit of texts
with the GIL released once) and writes the ids in input order, so the file is the same whatever the number of
workers. Only a few texts are in flight at once: memory stays bounded whatever the size of
the corpus.

The ids are little-endian unsigned integers of the smallest width that holds every id
(``id_dtype``), raw (``.bin``, as nanoGPT's ``train.bin``) or as a ``.npy`` array, with a
JSON sidecar (``<file>.json``, see ``sidecar``) telling how it was made. Both are written
under temporary names beside them (``engine.formats.atomic``) and renamed once both are
whole: bad input, a full disk or Ctrl-C leaves neither.
"""

from __future__ import annotations

import json
import os
import struct
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from engine.corpus.shards import CountSettings, plan_shards, shard_jsonl_blocks, shard_text_blocks, source_texts, trim_heap
from engine.corpus.sources import JSONL, TEXT, Source, optional
from engine.encode._encoder_core import join_packed
from engine.encode.tokenizer import ID_WIDTHS, JsonlBlock, TextBlock, Tokenizer
from engine.formats.atomic import atomic_file, atomic_write, check_writable_file

BATCH_CHARS = 1 << 20
"""Characters of text written at once (and bytes of a plain-text file read at once): a few
of them per encoding thread are all that is held."""

TRIM_BATCHES = 16
"""Batches between heap trims: glibc keeps what the texts and ids freed, so without a trim
resident memory grows with the input; a trim on every batch costs the threads time."""

JOINED_ROOM_MOST = 1 << 30
"""The most room ``dataset_ids`` asks for its ids before it has them: address space only,
until written; more is grown into (a block that large is mapped of its own, and moved, not
copied)."""

NPY_HEADER = 128
"""Bytes reserved for a ``.npy`` header: its shape is known only at the end."""

Progress = Callable[[int, int], None]
"""Told ``(bytes read, tokens written)`` so far, as batches are written."""


@dataclass(frozen=True, slots=True)
class DatasetSummary:
    """What was written: the ids file, its sidecar, and counts."""

    path: Path
    sidecar: Path
    dtype: str
    tokens: int
    documents: int
    bytes_read: int
    bad_records: int
    """JSONL lines and Parquet rows skipped (``skip_bad_records``)."""


def id_dtype(tokenizer: Tokenizer) -> str:
    """The smallest unsigned integer type that holds every id of ``tokenizer``."""
    return "uint16" if tokenizer.max_id < 1 << 16 else "uint32"


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def check_out(path: Path) -> None:
    """Refuse an output path (or its sidecar's) that cannot be written, before anything is read."""
    if path.suffix == ".npy":
        optional("numpy", "numpy", f"{path}: writing .npy")
    check_writable_file(path, "--out")
    check_writable_file(sidecar_path(path), f"--out {path}: its sidecar")


@dataclass(frozen=True, slots=True)
class DatasetIds:
    """The ids of a dataset in memory (``dataset_ids``): what ``encode_dataset`` would write,
    as a read-only view of their bytes, ``numpy.frombuffer(ids, dtype)`` its array (no copy;
    ``bytes(ids)`` copies them)."""

    ids: memoryview
    dtype: str
    tokens: int
    documents: int
    bytes_read: int
    bad_records: int


class _Encoding:
    """Every document of a dataset's sources encoded in order, a batch of ids at a time
    (``batches``), with the counts a summary gives."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        sources: Sequence[Source],
        text_field: str,
        eot: int | None,
        workers: int | None,
        errors: str,
        skip_bad_records: bool,
    ) -> None:
        self.tokenizer, self.sources, self.eot, self.workers = tokenizer, sources, eot, workers
        self.dtype = id_dtype(tokenizer)
        self.settings = CountSettings(
            tokenizer.pattern,
            tuple(tokenizer.added_tokens),
            text_field,
            errors,
            skip_bad_records,
            block_bytes=BATCH_CHARS,
            normalizer=tokenizer.normalizer,
        )
        self.read = [0]  # a list: the readers add to it as they go
        self.bad = self.tokens = self.documents = 0

    def _count(self, n: int) -> None:
        self.read[0] += n

    def _skip(self, n: int) -> None:
        self.bad += n

    def batches(self) -> Iterator[tuple[bytes, int]]:
        """Each batch's ids packed, with the bytes read when it was asked for."""
        encoded = _encoded_sources(
            self.sources, self.settings, self.tokenizer, self.eot, self.dtype, self.workers, self._count, self._skip, self.read
        )
        for (data, n, documents), done in encoded:
            self.tokens += n
            self.documents += documents
            yield data, done


def dataset_ids(
    tokenizer: Tokenizer,
    sources: Sequence[Source],
    *,
    text_field: str = "text",
    eot: int | None = None,
    workers: int | None = None,
    errors: str = "strict",
    skip_bad_records: bool = False,
) -> DatasetIds:
    """Every document of ``sources`` encoded into memory: the ids ``encode_dataset`` would
    write (its options, the same), for a caller that wants them as an array rather than a
    file. ``CorpusError`` names the file (and line) of bad input."""
    run = _Encoding(tokenizer, sources, text_field, eot, workers, errors, skip_bad_records)
    width = ID_WIDTHS[run.dtype]
    room = min(sum(source.size for source in sources) * width, JOINED_ROOM_MOST)  # an id a byte at most, as a rule
    packed = join_packed((data for data, _ in run.batches()), width, room)
    return DatasetIds(memoryview(packed).cast("B"), run.dtype, run.tokens, run.documents, run.read[0], run.bad)


def encode_dataset(
    tokenizer: Tokenizer,
    sources: Sequence[Source],
    out: str | os.PathLike[str],
    *,
    model: str = "",
    text_field: str = "text",
    eot: int | None = None,
    workers: int | None = None,
    errors: str = "strict",
    skip_bad_records: bool = False,
    skipped_inputs: Sequence[str] = (),
    progress: Progress | None = None,
) -> DatasetSummary:
    """Encode every document of ``sources`` into ``out`` (``.npy``: a NumPy array; else raw).

    ``eot``: an id appended after each document. ``workers``: threads encoding (default:
    all cores; 1 encodes in this thread). ``model`` is how the sidecar names the model.
    ``errors`` and ``skip_bad_records``: as in training (``CountSettings``);
    ``skipped_inputs``: the bad files skipped (``find_inputs``), for the sidecar.
    ``CorpusError`` names the file (and line) of bad input, ``OutputError`` a write that
    failed; then, as on any exception (Ctrl-C too), nothing is left under ``out`` or its
    sidecar's name.
    """
    path = Path(out)
    check_out(path)
    run = _Encoding(tokenizer, sources, text_field, eot, workers, errors, skip_bad_records)
    header = NPY_HEADER if path.suffix == ".npy" else 0
    side = sidecar_path(path)
    with ThreadPoolExecutor(1) as background, atomic_file(path) as f:  # renamed last: once the sidecar is whole
        # The model's digest (a few milliseconds, most of it copying the compiled tables) is made
        # beside the work: from the start when threads encode (the first batch is read and
        # parsed in this thread alone), else while this thread waits for the disk.
        digest = background.submit(tokenizer.digest) if tokenizer.threads(workers) > 1 else None
        f.write(b"\0" * header)
        for batch, (data, done) in enumerate(run.batches(), start=1):
            f.write(data)
            if batch % TRIM_BATCHES == 0:
                trim_heap()
            if progress is not None:
                progress(done, run.tokens)
        if header:
            f.seek(0)
            f.write(_npy_header(run.dtype, run.tokens))
        digest = digest or background.submit(tokenizer.digest)
        f.flush()
        os.fsync(f.fileno())
        info = sidecar(
            tokenizer,
            sources,
            path,
            model=model,
            digest=digest.result(),
            dtype=run.dtype,
            tokens=run.tokens,
            documents=run.documents,
            text_field=text_field,
            eot=eot,
            bad_records=run.bad,
            skipped_inputs=skipped_inputs,
        )
        atomic_write(side, json.dumps(info, indent=2, ensure_ascii=False) + "\n")
    return DatasetSummary(path, side, run.dtype, run.tokens, run.documents, run.read[0], run.bad)


def sidecar(
    tokenizer: Tokenizer,
    sources: Sequence[Source],
    path: Path,
    *,
    model: str,
    digest: str,
    dtype: str,
    tokens: int,
    documents: int,
    text_field: str,
    eot: int | None,
    bad_records: int,
    skipped_inputs: Sequence[str] = (),
) -> dict[str, Any]:
    """The sidecar's fields: enough to load the ids and to tell which model (``digest``: its
    ``Tokenizer.digest``) and inputs made them; ``vocab_size`` is the largest id + 1."""
    return {
        "file": path.name,
        "format": "npy" if path.suffix == ".npy" else "raw",
        "header_bytes": NPY_HEADER if path.suffix == ".npy" else 0,
        "dtype": dtype,
        "byte_order": "little",
        "tokens": tokens,
        "documents": documents,
        "bad_records_skipped": bad_records,
        "model": model,
        "model_digest": digest,
        "vocab_size": tokenizer.max_id + 1,  # an embedding table's rows: ids may skip some (cl100k's do)
        "eot": eot,
        "text_field": text_field,
        "inputs": [s.path for s in sources],
        "skipped_inputs": list(skipped_inputs),
    }


def _npy_header(dtype: str, count: int) -> bytes:
    """A NumPy format 1.0 header of a 1-D little-endian array, padded to ``NPY_HEADER`` bytes."""
    descr = {"uint16": "<u2", "uint32": "<u4"}[dtype]
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({count},), }}"
    body = text.ljust(NPY_HEADER - 10 - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body.encode("latin-1")


Batch = list[tuple[str, bool]]
Encoded = tuple[tuple[bytes, int, int], int]
"""Ids packed, how many, the documents they end, and the bytes read when they were asked for."""


def _encoded_sources(
    sources: Sequence[Source],
    settings: CountSettings,
    tokenizer: Tokenizer,
    eot: int | None,
    dtype: str,
    workers: int | None,
    count: Callable[[int], None],
    skip: Callable[[int], None],
    read: list[int],
) -> Iterator[Encoded]:
    """The sources encoded in order: JSONL files a block of lines at a time, read in C where
    the tokenizer encodes in C (``Tokenizer.encode_jsonl_blocks``); plain-text files a block
    of bytes at a time, their UTF-8 encoded in C, under a pre-tokenizer the compiled code runs
    (``Tokenizer.encode_text_blocks``); the others as texts."""
    utf8 = settings.pretokenizer.chunked

    def kind(source: Source) -> str:
        return source.format if source.format == JSONL or (source.format == TEXT and utf8) else ""

    for format, group in groupby(sources, key=kind):
        if format == JSONL:
            yield from _encoded_jsonl(list(group), settings, tokenizer, eot, dtype, workers, count, skip, read)
        elif format == TEXT:
            yield from _encoded_text(list(group), settings, tokenizer, eot, dtype, workers, count, read)
        else:
            yield from _encoded(_batches(list(group), settings, count, skip, read), tokenizer, eot, dtype, workers)


def _encoded_text(
    sources: Sequence[Source],
    settings: CountSettings,
    tokenizer: Tokenizer,
    eot: int | None,
    dtype: str,
    workers: int | None,
    count: Callable[[int], None],
    read: list[int],
) -> Iterator[Encoded]:
    """Plain-text files a block of bytes at a time, each file one document: a block is
    handed on once the next is read, so the last of a file is known (an empty file is one
    empty block)."""
    width = ID_WIDTHS[dtype]
    asked: deque[int] = deque()  # per block: the bytes read when it was made

    def blocks() -> Iterator[TextBlock]:
        for source in sources:
            for shard in plan_shards([source], settings, shard_bytes=max(source.size, 1)):
                with shard_text_blocks(shard, settings, count) as (found, texts):
                    held: tuple[bytes, int] = (b"", 0)
                    for k, block in enumerate(found):
                        if k:
                            asked.append(read[0])
                            yield (*held, False, texts)
                        held = block
                    asked.append(read[0])
                    yield (*held, True, texts)

    for data, last in tokenizer.encode_text_blocks(blocks(), dtype, eot, workers):
        yield (data, len(data) // width, int(last)), asked.popleft()


def _encoded_jsonl(
    sources: Sequence[Source],
    settings: CountSettings,
    tokenizer: Tokenizer,
    eot: int | None,
    dtype: str,
    workers: int | None,
    count: Callable[[int], None],
    skip: Callable[[int], None],
    read: list[int],
) -> Iterator[Encoded]:
    """JSONL sources encoded a block of lines at a time; the records skipped told once all
    are encoded (the threads read the lines they are in)."""
    width = ID_WIDTHS[dtype]
    asked: deque[int] = deque()  # per block: the bytes read when it was made
    skipped: list[Callable[[], int]] = []

    def blocks() -> Iterator[JsonlBlock]:
        for source in sources:
            for shard in plan_shards([source], settings, shard_bytes=max(source.size, 1)):
                with shard_jsonl_blocks(shard, settings, count) as (lines, record, bad):
                    for block, offset in lines:
                        asked.append(read[0])
                        yield block, offset, record
                skipped.append(bad)

    for data, documents, ends in tokenizer.encode_jsonl_blocks(blocks(), settings.text_field, dtype, eot, workers):
        yield (data, len(data) // width, documents), asked.popleft() if ends else asked[0]
    skip(sum(bad() for bad in skipped))


def _batches(
    sources: Sequence[Source], settings: CountSettings, count: Callable[[int], None], skip: Callable[[int], None], read: list[int]
) -> Iterator[tuple[Batch, int]]:
    """Texts of the sources in batches of about ``BATCH_CHARS``, each with the bytes read
    once it is made."""
    batch: Batch = []
    size = 0
    for source in sources:
        for text, last in source_texts(source, settings, count, skip):
            batch.append((text, last))
            size += len(text)
            if size >= BATCH_CHARS:
                yield batch, read[0]
                batch, size = [], 0
    if batch:
        yield batch, read[0]


def _encoded(
    batches: Iterator[tuple[Batch, int]], tokenizer: Tokenizer, eot: int | None, dtype: str, workers: int | None
) -> Iterator[Encoded]:
    """Each batch encoded (``Tokenizer.encode_packed_batches``: in threads, in order) as
    little-endian ids, an end-of-text id after each document's last text; with how many ids
    and documents, and the bytes read when the batch was made."""
    width = ID_WIDTHS[dtype]
    done: deque[tuple[int, int]] = deque()  # per batch: documents it ends, bytes read when it was made

    def texts() -> Iterator[tuple[list[str], list[bool]]]:
        for batch, read in batches:
            ends = [last for _, last in batch]
            done.append((sum(ends), read))
            yield [text for text, _ in batch], ends

    for data in tokenizer.encode_packed_batches(texts(), dtype, eot, workers):
        documents, read = done.popleft()
        yield (data, len(data) // width, documents), read
