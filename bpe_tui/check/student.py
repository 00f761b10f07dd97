"""Running the student's code: a process of its own, a time limit, and what came back.

``run_student`` starts ``python -m bpe_tui.check.runner`` (see ``bpe_tui.check.runner``) in a
session of its own, so that a time-out, a quit or Ctrl-C ends it together with any worker
processes it started, and waits, calling ``tick(seconds)`` as the time passes. Its prints go
to ``output``: this process's stderr when headless, a file shown on the check screen when
not. The student's code runs with the user's own rights, as ``python FILE`` would: never from
a served app (``bpe-tui serve`` refuses ``check``).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from engine import SettingsError

Frame = tuple[str, int, str, str]
"""A frame of the student's code: file, line, function and the code on that line."""
TICK = 0.1
"""Seconds between two looks at the student's process (and two calls of ``tick``)."""
_RUNNING: set[subprocess.Popen[bytes]] = set()
"""The students' processes running now, ended by ``end_all`` whatever thread waits on them."""


@dataclass(frozen=True)
class Target:
    """``FILE.py:NAME``: the student's file and the function or class in it."""

    path: Path
    name: str

    @classmethod
    def parse(cls, given: str) -> Target:
        """``SettingsError`` unless ``given`` names an existing .py file and a name in it."""
        file, colon, name = given.rpartition(":")
        if not colon or not file or not name.isidentifier():
            raise SettingsError(f"{given}: name the file and the function or class in it, FILE.py:NAME (train_bpe.py:train_bpe)")
        path = Path(file)
        if path.suffix != ".py":
            raise SettingsError(f"{file}: not a Python file (.py)")
        if not path.is_file():
            raise SettingsError(f"{file}: no such file" if not path.exists() else f"{file}: not a file")
        return cls(path, name)

    def __str__(self) -> str:
        return f"{self.path.name}:{self.name}"


@dataclass(frozen=True)
class Returned:
    """The code returned (``value``, in the shape asked for) after ``seconds`` of its own."""

    value: Any
    seconds: float
    output: str = ""


@dataclass(frozen=True)
class Raised:
    """The code raised: the student's own frames, outermost first, and the exception."""

    frames: list[Frame]
    exception: str
    """As Python prints its last line (a SyntaxError with its place in the file)."""
    during: str
    """What was being done: ``train_bpe('corpus.txt', 500, [...])``, ``importing x.py``."""
    worker_frames: list[Frame] = field(default_factory=list)
    """The student's frames in a worker process, when the exception came from one."""
    output: str = ""


@dataclass(frozen=True)
class Refused:
    """Nothing to compare, in one line: no such name, the wrong shape, ``sys.exit``."""

    message: str
    output: str = ""


@dataclass(frozen=True)
class TimedOut:
    seconds: float
    output: str = ""


@dataclass(frozen=True)
class Died:
    """The process ended without a report (killed, out of memory, a crash in C)."""

    how: str
    output: str = ""


Outcome = Returned | Raised | Refused | TimedOut | Died


class Stopped(Exception):
    """The run was stopped from outside (the app closing): its process is ended."""


def run_student(
    target: Target,
    kind: str,
    request: dict[str, Any],
    timeout: float,
    tick: Callable[[float], None] = lambda seconds: None,
    stopped: Callable[[], bool] = lambda: False,
    headless: bool = True,
) -> Outcome:
    """Run ``target`` (``kind`` "train" or "encode") on ``request`` in a process of its own;
    what it did. Stopped after ``timeout`` seconds; ``Stopped`` when ``stopped()``, and
    KeyboardInterrupt passes through, each after ending the process."""
    with tempfile.TemporaryDirectory(prefix="bpe-tui-check-") as folder:
        asked, answer, printed = Path(folder, "request"), Path(folder, "result"), Path(folder, "output")
        asked.write_bytes(pickle.dumps({**request, "file": str(target.path.resolve()), "name": target.name, "kind": kind}))
        with open(printed, "wb") as log:
            output: IO[bytes] | int = sys.stderr.fileno() if headless and _has_fileno(sys.stderr) else log
            started = time.monotonic()
            process = subprocess.Popen(
                [sys.executable, "-m", "bpe_tui.check.runner", str(asked), str(answer)],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                **_own_session(),
            )
            _RUNNING.add(process)
            try:
                while True:
                    try:
                        code = process.wait(TICK)
                        break
                    except subprocess.TimeoutExpired:
                        elapsed = time.monotonic() - started
                        if elapsed >= timeout:
                            return TimedOut(timeout, _tail(printed))
                        if stopped():
                            raise Stopped from None
                        tick(elapsed)
            finally:
                _end(process)
                _RUNNING.discard(process)
        shown = _tail(printed)
        if not answer.exists():
            return Died(_death(code), shown)
        report = pickle.loads(answer.read_bytes())
    return _outcome(report, shown)


def _outcome(report: dict[str, Any], output: str) -> Outcome:
    kind = report["kind"]
    if kind == "returned":
        return Returned(report["value"], report["seconds"], output)
    if kind == "raised":
        return Raised(report["frames"], report["exception"], report["during"], report["worker_frames"], output)
    return Refused(report["message"], output)


def _has_fileno(stream: object) -> bool:
    try:
        return isinstance(stream.fileno(), int)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # captured (pytest, an app): no descriptor
        return False


def end_all() -> None:
    """End every student's process still running (the app is closing, or was killed)."""
    for process in list(_RUNNING):
        _end(process)


def _own_session() -> dict[str, Any]:
    """Popen's arguments that give the process a group of its own, ended as one."""
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
    return {"start_new_session": True}


def _end(process: subprocess.Popen[bytes]) -> None:
    """End the process and everything it started (its session), if any is still running."""
    if os.name != "nt":
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    elif process.poll() is None:
        process.kill()
    process.wait()


def _death(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        return f"killed by {name}" + (": out of memory?" if name == "SIGKILL" else "")
    return f"exit status {code}"


def _tail(path: Path, lines: int = 12) -> str:
    """The last ``lines`` of what the student's code printed (when it went to a file)."""
    try:
        text = path.read_bytes()[-8192:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
