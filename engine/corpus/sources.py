"""Where the text comes from: input paths, directories and glob patterns expanded into files,
each file's format told by its extension.

- plain text: any file whose extension names no other format; the whole file is one document.
- JSONL (``.jsonl``, ``.ndjson``): each line a JSON object, its document in a text field.
- Parquet (``.parquet``): each row a document, in a string column (needs ``pyarrow``).
- ``.gz`` or ``.zst``/``.zstd`` after any of them: compressed (zstd needs ``zstandard``).

Inputs are expanded and sorted by path, so the listing order never matters. Paths with a
protocol (``s3://``, ``gs://``, ...) are read through ``fsspec`` when it is installed; local
paths never need it.
"""

from __future__ import annotations

import glob
import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, BinaryIO

from engine.errors import CorpusError, SettingsError, unreadable

TEXT, JSONL, PARQUET = "text", "jsonl", "parquet"
FORMATS = {".jsonl": JSONL, ".ndjson": JSONL, ".parquet": PARQUET}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
UNREAD = frozenset(
    ".bz2 .xz .lz4 .lzma .br .zip .tar .tgz .7z .rar .json .csv .tsv .arrow .feather .avro .orc "
    ".pkl .pickle .npy .npz .pt .bin .pdf .docx .xlsx".split()
)
"""Extensions of formats that are not read: refused rather than trained on as text."""
KNOWN = "plain text, .jsonl or .parquet, optionally compressed as .gz or .zst"


@dataclass(frozen=True, slots=True)
class Source:
    """One input file: where it is, its format and compression, its size in bytes as stored."""

    path: str
    format: str
    compression: str | None
    size: int


def optional(module: str, extra: str, why: str) -> ModuleType:
    """Import an optional package, or one line naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise CorpusError(f"{why} needs {module.split('.')[0]}: pip install 'bpe-tui[{extra}]'") from None


def is_url(path: str) -> bool:
    return "://" in path


def _fs(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of a URL and the path within it."""
    fsspec = optional("fsspec", "dask", f"{url}: reading a URL")
    try:
        fs_and_path: tuple[Any, str] = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as e:  # no backend for the protocol (s3fs, gcsfs, ...)
        raise CorpusError(f"{url}: cannot open this URL ({e})") from None
    return fs_and_path


def open_binary(path: str) -> BinaryIO:
    """Open an input file as stored (compressed or not); ``CorpusError`` in one line if it cannot be."""
    if is_url(path):
        fs, inner = _fs(path)
        try:
            opened: BinaryIO = fs.open(inner, "rb")  # an fsspec file: binary, read-only
        except OSError as e:
            raise CorpusError(unreadable(path, e)) from None
        return opened
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CorpusError(unreadable(path, e)) from None
    if os.path.isdir(path):  # some systems open a directory without complaint
        f.close()
        raise CorpusError(unreadable(path, IsADirectoryError()))
    return f


def describe(path: str, size: int) -> Source:
    """The format and compression ``path``'s extension names; ``CorpusError`` for one not read."""
    name = path.rsplit("/", 1)[-1].lower()
    stem, ext = os.path.splitext(name)
    compression = COMPRESSIONS.get(ext)
    if compression is not None:
        stem, ext = os.path.splitext(stem)
    if ext in UNREAD or (compression and ext == ".parquet"):
        what = ext + (f".{name.rsplit('.', 1)[-1]}" if compression else "")
        raise CorpusError(f"{path}: unknown extension {what}: bpe-tui reads {KNOWN}")
    return Source(path, FORMATS.get(ext, TEXT), compression, size)


def expand_inputs(inputs: Sequence[str | os.PathLike[str]]) -> list[Source]:
    """The files ``inputs`` name, sorted by path, each once.

    A directory stands for every file below it (names starting with ``.`` skipped); a path
    with ``*``, ``?`` or ``[`` is a glob pattern (``**`` crosses directories) that must match.
    """
    if not inputs:
        raise SettingsError("no input files given")
    found: dict[str, int] = {}
    for item in inputs:
        path = os.fspath(item)
        for name, size in _expand_url(path) if is_url(path) else _expand_local(path):
            found[name] = size
    return [describe(name, found[name]) for name in sorted(found)]


def _expand_local(path: str) -> list[tuple[str, int]]:
    if glob.has_magic(path) and not os.path.exists(path):  # "[1].txt" may be a file's own name
        names = [p for p in glob.glob(path, recursive=True) if os.path.isfile(p)]
        if not names:
            raise CorpusError(f"{path}: no file matches this pattern")
    elif os.path.isdir(path):
        names = []
        for root, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            names += [os.path.join(root, f) for f in files if not f.startswith(".")]
        if not names:
            raise CorpusError(f"{path}: the directory holds no files")
    else:
        open_binary(path).close()  # missing or unreadable: one line now
        names = [path]
    return [(os.path.normpath(n), os.path.getsize(n)) for n in names]


def _expand_url(url: str) -> list[tuple[str, int]]:
    fs, inner = _fs(url)
    if glob.has_magic(inner):
        names = [p for p in fs.glob(inner) if fs.isfile(p)]
        if not names:
            raise CorpusError(f"{url}: no file matches this pattern")
    elif fs.isdir(inner):
        names = [p for p in fs.find(inner) if not p.rsplit("/", 1)[-1].startswith(".")]
        if not names:
            raise CorpusError(f"{url}: the directory holds no files")
    elif fs.exists(inner):
        names = [inner]
    else:
        raise CorpusError(f"{url}: no such file or directory")
    return [(fs.unstrip_protocol(n), fs.size(n)) for n in names]


def label(paths: Sequence[str]) -> str:
    """How messages name a set of input files: the file, or the first and how many more."""
    if len(paths) == 1:
        return paths[0]
    more = len(paths) - 1
    return f"{paths[0]} and {more:,} more file{'' if more == 1 else 's'}"
