"""Where the text comes from: input paths, directories and glob patterns expanded into files,
each file's format told by its extension.

- plain text: any file whose extension names no other format; the whole file is one document.
- JSONL (``.jsonl``, ``.ndjson``): each line a JSON object, its document in a text field.
- Parquet (``.parquet``): each row a document, in a string column (needs ``pyarrow``).
- ``.gz`` or ``.zst``/``.zstd`` after any of them: compressed (zstd needs ``backports.zstd``
  before Python 3.14).

Inputs are expanded and sorted by path, so the listing order never matters. Paths with a
protocol (``s3://``, ``gs://``, ...) are read through ``fsspec`` when it is installed; local
paths never need it.

Streams: ``-`` is standard input, and a named pipe (``mkfifo``) named as an input is read the
same way: once, front to back, as it arrives, its size unknown. ``-`` is plain text unless
``stdin_format`` says JSONL; a named pipe's name tells its format as a file's does (never
Parquet, which is read from its end).

Every path is looked at before anything is read. What a directory or a pattern turns up
must be a readable file of a format that is read: a broken link, a link loop, an unreadable
file, a special file (device, socket, named pipe) or an unknown extension is an error naming
it, or with ``skip_bad`` it is skipped and told (``Inputs.skipped``). Links are followed,
into directories too; one leading back to a directory the walk is inside is a loop.
"""

from __future__ import annotations

import codecs
import glob
import importlib
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, BinaryIO

from engine.errors import CorpusError, SettingsError, not_utf8, unreadable

TEXT, JSONL, PARQUET = "text", "jsonl", "parquet"
FORMATS = {".jsonl": JSONL, ".ndjson": JSONL, ".parquet": PARQUET}
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
UNREAD = frozenset(
    ".bz2 .xz .lz4 .lzma .br .zip .tar .tgz .7z .rar .json .csv .tsv .arrow .feather .avro .orc "
    ".pkl .pickle .npy .npz .pt .bin .pdf .docx .xlsx".split()
)
"""Extensions of formats that are not read: refused rather than trained on as text."""
KNOWN = "plain text, .jsonl or .parquet, optionally compressed as .gz or .zst"
STDIN = "-"
"""The input that stands for standard input."""
SKIP_HINT = "--skip-bad-inputs skips such files"
SPECIAL_FILES = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISFIFO, "a named pipe (name it as an input of its own to read it as a stream)"),
)


@dataclass(frozen=True, slots=True)
class Source:
    """One input file: where it is, its format and compression, its size in bytes as stored."""

    path: str
    format: str
    compression: str | None
    size: int
    stream: bool = False
    """Standard input or a named pipe: read once, front to back; its size is unknown (0)."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What input paths stand for: the files to read, and the bad ones skipped."""

    sources: list[Source]
    skipped: list[str]
    """Each bad file skipped, as the line saying what is wrong with it."""


Found = tuple[str, "Source | str"]
"""A file turned up by an input: its source, or the line saying what is wrong with it."""


def optional(module: str, extra: str, why: str, package: str | None = None) -> ModuleType:
    """Import an optional module, or one line naming the extra that installs its ``package``
    (by default the module's top-level name)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise CorpusError(f"{why} needs {package or module.split('.')[0]}: pip install 'bpe-tui[{extra}]'") from None


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
    if path == STDIN:
        return open(0, "rb", closefd=False)  # fd 0, whatever sys.stdin has become
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


def check_utf8(path: str, block_size: int = 1 << 20) -> None:
    """``CorpusError`` at the first byte of ``path`` that is not UTF-8: for a file read by
    code other than the engine's, which would fail on it with a traceback of its own."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0  # of this block; the decoder holds back a character cut at the last one
    with open_binary(path) as f:
        while True:
            data = f.read(block_size)
            held = len(decoder.getstate()[0])
            try:
                decoder.decode(data, final=not data)
            except UnicodeDecodeError as e:  # e.start counts from the bytes held back
                raise CorpusError(not_utf8(path, offset - held + e.start)) from None
            if not data:
                return
            offset += len(data)


def describe(path: str, size: int, stream: bool = False) -> Source:
    """The format and compression ``path``'s extension names; ``CorpusError`` for one not read."""
    name = path.rsplit("/", 1)[-1].lower()
    stem, ext = os.path.splitext(name)
    compression = COMPRESSIONS.get(ext)
    if compression is not None:
        stem, ext = os.path.splitext(stem)
    if ext in UNREAD or (compression and ext == ".parquet"):
        what = ext + (f".{name.rsplit('.', 1)[-1]}" if compression else "")
        raise CorpusError(f"{path}: unknown extension {what}: bpe-tui reads {KNOWN}")
    format = FORMATS.get(ext, TEXT)
    if stream and format == PARQUET:
        raise CorpusError(f"{path}: a named pipe: Parquet is read from its end, which a pipe cannot do: give a file")
    return Source(path, format, compression, size, stream)


def expand_inputs(inputs: Sequence[str | os.PathLike[str]], skip_bad: bool = False, stdin_format: str = TEXT) -> list[Source]:
    """The files ``inputs`` name, sorted by path, each once (see ``find_inputs``)."""
    return find_inputs(inputs, skip_bad, stdin_format).sources


def find_inputs(inputs: Sequence[str | os.PathLike[str]], skip_bad: bool = False, stdin_format: str = TEXT) -> Inputs:
    """The files ``inputs`` name, sorted by path, each once; ``CorpusError`` for the first bad
    one, unless ``skip_bad`` and a directory or a pattern turned it up.

    A directory stands for every file below it (names starting with ``.`` skipped); a path
    with ``*``, ``?`` or ``[`` is a glob pattern (``**`` crosses directories) that must match;
    ``-`` is standard input, read as ``stdin_format`` (``"text"`` or ``"jsonl"``).
    """
    if not inputs:
        raise SettingsError("no input files given")
    found: dict[str, Source] = {}
    skipped: dict[str, str] = {}
    for item in inputs:
        path = os.fspath(item)
        if is_url(path):
            found.update((name, describe(name, size)) for name, size in _expand_url(path))
            continue
        for name, source in _expand_local(path, stdin_format):
            if isinstance(source, Source):
                found[name] = source
            elif skip_bad:
                skipped[name] = source
            else:
                raise CorpusError(f"{source}; {SKIP_HINT}")
    bad = [skipped[name] for name in sorted(skipped)]
    if not found and bad:
        raise CorpusError(f"nothing to read: every file is bad and skipped ({len(bad):,}), the first {bad[0]}")
    return Inputs([found[name] for name in sorted(found)], bad)


def _expand_local(path: str, stdin_format: str) -> list[Found]:
    if path == STDIN:
        if os.isatty(0):
            raise CorpusError("-: standard input is a terminal: pipe the corpus in, as in zcat corpus.gz | bpe-tui train - --headless")
        return [(STDIN, Source(STDIN, stdin_format, None, 0, stream=True))]
    if glob.has_magic(path) and not os.path.lexists(path):  # "[1].txt" may be a file's own name
        names = glob.glob(path, recursive=True)
        found = [(os.path.normpath(name), _file(name, _stat(name))) for name in sorted(names) if not os.path.isdir(name)]
        if not found:
            raise CorpusError(f"{path}: no file matches this pattern")
        return found
    try:
        status = os.stat(path)
    except OSError as e:
        raise CorpusError(unreadable(path, e)) from None
    if stat.S_ISDIR(status.st_mode):
        found = [(os.path.normpath(name), _file(name, why)) for name, why in _walk(path, status)]
        if not found:
            raise CorpusError(f"{path}: the directory holds no files")
        return found
    if stat.S_ISFIFO(status.st_mode):
        return [(os.path.normpath(path), describe(os.path.normpath(path), 0, stream=True))]
    if not stat.S_ISREG(status.st_mode):
        raise CorpusError(f"{path}: {_special(status)}, not a file")
    open_binary(path).close()  # unreadable: one line now
    return [(os.path.normpath(path), describe(os.path.normpath(path), status.st_size))]


def _stat(path: str) -> os.stat_result | str:
    """The status of ``path`` (links followed), or the line saying why there is none."""
    try:
        return os.stat(path)
    except OSError as e:
        return unreadable(path, e)


def _walk(top: str, status: os.stat_result) -> Iterator[tuple[str, os.stat_result | str]]:
    """The files below the directory ``top`` in order of name (names starting with ``.``
    skipped), each with its status or the line saying why there is none."""

    def walk(directory: str, inside: frozenset[tuple[int, int]]) -> Iterator[tuple[str, os.stat_result | str]]:
        try:
            with os.scandir(directory) as entries:
                names = sorted(e.name for e in entries if not e.name.startswith("."))
        except OSError as e:
            yield directory, unreadable(directory, e)
            return
        for name in names:
            path = os.path.join(directory, name)
            found = _stat(path)
            if isinstance(found, str) or not stat.S_ISDIR(found.st_mode):
                yield path, found
            elif (found.st_dev, found.st_ino) in inside:
                yield path, f"{path}: a symbolic link loop (it leads back to {os.path.realpath(path)}, a directory it is in)"
            else:
                yield from walk(path, inside | {(found.st_dev, found.st_ino)})

    yield from walk(top, frozenset({(status.st_dev, status.st_ino)}))


def _file(path: str, found: os.stat_result | str) -> Source | str:
    """The source of a file a directory or a pattern turned up, or why it cannot be one."""
    if isinstance(found, str):
        return found
    path = os.path.normpath(path)
    if not stat.S_ISREG(found.st_mode):
        return f"{path}: {_special(found)}, not a file"
    if not os.access(path, os.R_OK):
        return f"{path}: permission denied"
    try:
        return describe(path, found.st_size)
    except CorpusError as e:
        return str(e)


def _special(status: os.stat_result) -> str:
    return next((kind for test, kind in SPECIAL_FILES if test(status.st_mode)), "not a regular file")


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
    paths = ["standard input" if p == STDIN else p for p in paths]
    if len(paths) == 1:
        return paths[0]
    more = len(paths) - 1
    return f"{paths[0]} and {more:,} more file{'' if more == 1 else 's'}"
