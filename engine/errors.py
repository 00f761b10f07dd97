"""Errors the engine raises on bad input: each message names the file and what is wrong."""

from __future__ import annotations

import errno
import os


class BpeError(Exception):
    """Base class: a problem with the user's input, reported as one line."""


class CorpusError(BpeError):
    """The training corpus cannot be used (missing, unreadable, not UTF-8, empty)."""


class ModelFileError(BpeError):
    """A tokenizer file is missing, corrupt, truncated or of the wrong kind."""


class ResumeError(BpeError):
    """A saved training run does not match the corpus or settings it is resumed with."""


class SettingsError(BpeError, ValueError):
    """Training settings that cannot work (vocabulary too small, bad special tokens)."""


class TokenIdError(BpeError, ValueError):
    """Token ids to decode, or one id whose token is looked up, that are not the
    vocabulary's: bools, not integers, or no entry."""


class OutputError(BpeError, OSError):
    """An output file could not be written (a full disk, a read-only place); nothing is left
    under its name. An ``OSError`` too, as the failure it reports."""


def unreadable(path: str | os.PathLike[str], error: OSError) -> str:
    """One line saying why ``path`` could not be opened or read."""
    if error.errno == errno.ELOOP:
        return f"{path}: a symbolic link loop (following its links never reaches a file)"
    if isinstance(error, FileNotFoundError):
        if os.path.islink(path):
            return f"{path}: a broken symbolic link (to {os.readlink(path)}, which does not exist)"
        return f"{path}: no such file or directory"
    if isinstance(error, IsADirectoryError):
        return f"{path}: is a directory, not a file"
    if isinstance(error, PermissionError):
        return f"{path}: permission denied"
    return f"{path}: cannot read ({error.strerror or error})"


def not_utf8(path: str | os.PathLike[str], offset: int) -> str:
    """The one line for a file that is not UTF-8 from byte ``offset`` on, whatever reads it."""
    return f"{path}: not valid UTF-8 at byte offset {offset}"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is one: ``1 special token``, ``5 special tokens``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def one_line(message: str) -> str:
    """``message`` on one line: another library's error text may run over several."""
    return " ".join(line.strip() for line in message.splitlines() if line.strip())
