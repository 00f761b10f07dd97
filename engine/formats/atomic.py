"""Files written whole or not at all: a save that is interrupted, or a disk that fills up,
leaves the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from engine.errors import SettingsError

Pathish = str | os.PathLike[str]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable_file(path: Path, option: str) -> None:
    """Refuse, as ``option PATH: why``, a file that ``atomic_write`` could not write: checked
    before the work that leads to it, not after."""
    if path.is_dir():
        raise SettingsError(f"{option} {path}: is a directory, not a file")
    if not path.parent.is_dir():
        raise SettingsError(f"{option} {path}: {path.parent} is not a directory")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise SettingsError(f"{option} {path}: {path.parent} is not writable")


def check_writable_dir(path: Path, option: str) -> None:
    """Refuse, as ``option PATH: why``, a directory that files could not be written into,
    made if need be: checked before the work that leads to them, not after."""
    if path.exists() and not path.is_dir():
        raise SettingsError(f"{option} {path}: exists and is not a directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise SettingsError(f"{option} {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SettingsError(f"{option} {path}: {existing} is not writable")


def atomic_write(path: Pathish, data: str | bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path``, sync it, then rename it over ``path``."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a saved file is an ordinary file
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
