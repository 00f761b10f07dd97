"""Files written whole or not at all: a save that is interrupted, or a disk that fills up,
leaves the old file or the new one, never half of one.

A file is written under a temporary name beside it, ``.NAME.PID.XXXXXXXX.tmp`` (PID: the
writing process), synced, then renamed over ``NAME``. A process killed outright (SIGKILL, a
power cut) leaves its temporary file; the next write of ``NAME`` removes those whose process
is gone.
"""

from __future__ import annotations

import errno
import glob
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from engine.errors import BpeError, OutputError, SettingsError

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
    if not path.parent.exists():
        raise SettingsError(f"{option} {path}: {path.parent} does not exist")
    if not path.parent.is_dir():
        raise SettingsError(f"{option} {path}: {path.parent} is not a directory")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise SettingsError(f"{option} {path}: {path.parent} is not writable")


def check_writable_dir(path: Path, option: str, files: tuple[str, ...] = ()) -> None:
    """Refuse, as ``option PATH: why``, a directory that ``files`` could not be written into,
    made if need be: checked before the work that leads to them, not after."""
    if path.exists() and not path.is_dir():
        raise SettingsError(f"{option} {path}: exists and is not a directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise SettingsError(f"{option} {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SettingsError(f"{option} {path}: {existing} is not writable")
    for name in files:
        if (path / name).is_dir():
            raise SettingsError(f"{option} {path}: {path / name} is a directory, not a file")


def cannot_write(path: Pathish, error: OSError) -> OutputError:
    """The one line for a file that could not be written."""
    return OutputError(f"{path}: cannot write it ({error.strerror or error})")


def make_dir(path: Pathish) -> Path:
    """Directory ``path``, made with its parents if need be; ``OutputError`` in one line
    (``cannot_write``) if it cannot be, saying what is in its way where something is."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as e:
        raise OutputError(f"{path}: cannot write it ({_in_the_way(path, e)})") from None
    except OSError as e:
        raise cannot_write(path, e) from None
    return path


def _in_the_way(path: Path, error: OSError) -> str:
    """What stands where directory ``path`` was to be made (``mkdir`` says only "File exists")."""
    try:
        path.stat()
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a symbolic link loop"
        if isinstance(e, FileNotFoundError) and path.is_symlink():
            return f"a broken symbolic link, to {os.readlink(path)}"
        return error.strerror or str(error)
    return "a file, not a directory"


@contextmanager
def atomic_file(path: Pathish) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new contents into: synced and renamed over ``path``
    when the block ends, removed if it raises. Any ``OSError`` in the block (a full disk) is
    ``OutputError`` naming ``path``."""
    path = Path(path)
    remove_stale(path)
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
    except OSError as e:
        raise cannot_write(path, e) from None
    tmp = Path(name)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a saved file is an ordinary file
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and not isinstance(e, BpeError):
            raise cannot_write(path, e) from None
        raise


def atomic_write(path: Pathish, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through ``atomic_file``: all of it, or nothing."""
    with atomic_file(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def remove_stale(path: Path) -> None:
    """Delete the temporary files left beside ``path`` by writers whose process is gone."""
    prefix = f".{path.name}."
    for tmp in path.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        pid = tmp.name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            with suppress(OSError):  # not ours to remove (another user's directory): it does no harm
                tmp.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or no pid at all: leave the file be
    return True
