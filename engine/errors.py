"""Errors the engine raises on bad input: each message names the file and what is wrong."""

from __future__ import annotations

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


def unreadable(path: str | os.PathLike[str], error: OSError) -> str:
    """One line saying why ``path`` could not be opened or read."""
    if isinstance(error, FileNotFoundError):
        return f"{path}: no such file or directory"
    if isinstance(error, IsADirectoryError):
        return f"{path}: is a directory, not a file"
    if isinstance(error, PermissionError):
        return f"{path}: permission denied"
    return f"{path}: cannot read ({error.strerror or error})"
