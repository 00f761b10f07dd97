"""The student's code, run in a process of its own: ``python -m bpe_tui.check.runner REQUEST RESULT``.

The parent (``bpe_tui.check.student``) pickles a request into the file ``REQUEST``: the
student's file and the name in it, and what to call it with. This process imports the file
(its folder first on ``sys.path``, as ``python FILE`` would have it, so the student's own
modules import), calls the function or builds the class, checks the shape of what comes back
(``engine.check.shapes``) and pickles the outcome into ``RESULT``, as plain ``dict``, ``list``,
``tuple``, ``bytes`` and ``int``. Only the call is timed, not the import.

An exception is sent back as the student's frames only (``student_frames``): neither this
runner's nor bpe-tui's, nor the standard library's or an installed package's, so what the
student reads is where their code went wrong. A worker process's traceback (``multiprocessing``,
``concurrent.futures``), which reaches here as text, is cut the same way.

This module imports no more than it needs (no Textual): the student's time is their own.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pickle
import re
import site
import sys
import sysconfig
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

import engine

Frame = tuple[str, int, str, str]
"""A frame of the student's code: file, line, function and the code on that line."""

HERE = Path(__file__).resolve().parent
OURS = (HERE.parent, Path(engine.__file__).resolve().parent)
"""bpe-tui's own packages, whose frames a student never needs."""
WORKER_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')


def _not_theirs() -> tuple[Path, ...]:
    """Where code that is not the student's lives: bpe-tui, the standard library, installed packages."""
    places = [*OURS]
    paths = sysconfig.get_paths()
    places += [Path(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    places += [Path(p) for p in site.getsitepackages()]
    user = site.getusersitepackages()
    if isinstance(user, str):
        places.append(Path(user))
    return tuple(p.resolve() for p in places if p)


NOT_THEIRS = _not_theirs()


def theirs(filename: str) -> bool:
    """Whether a frame's file is the student's own."""
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return False
    path = Path(filename).resolve()
    return not any(path.is_relative_to(place) for place in NOT_THEIRS)


def student_frames(tb: TracebackType | None) -> list[Frame]:
    """The frames of ``tb`` in the student's files, outermost first, each with its code line."""
    return [(f.filename, f.lineno or 0, f.name, (f.line or "").strip()) for f in traceback.extract_tb(tb) if theirs(f.filename)]


def worker_frames(error: BaseException) -> list[Frame]:
    """The student's frames in a worker process's traceback, which ``multiprocessing`` and
    ``concurrent.futures`` hand over as text in the exception's cause."""
    cause = error.__cause__
    if cause is None or "RemoteTraceback" not in type(cause).__name__:
        return []
    lines = str(getattr(cause, "tb", cause)).splitlines()
    frames = []
    for i, line in enumerate(lines):
        match = WORKER_FRAME.match(line)
        if match and theirs(match["file"]):
            code = lines[i + 1].strip() if i + 1 < len(lines) and not WORKER_FRAME.match(lines[i + 1]) else ""
            frames.append((match["file"], int(match["line"]), match["function"], code))
    return frames


def raised(error: BaseException, during: str) -> dict[str, Any]:
    """The report of an exception in the student's code."""
    if isinstance(error, SystemExit):
        return {"kind": "refused", "message": f"called sys.exit({error.code!r}) in {during}"}
    exception = "".join(traceback.format_exception_only(type(error), error)).rstrip()
    return {
        "kind": "raised",
        "frames": student_frames(error.__traceback__),
        "worker_frames": worker_frames(error),
        "exception": exception,
        "during": during,
    }


def load(file: Path) -> ModuleType:
    """Import the student's file. In a package (``cs336_basics/train_bpe.py`` beside an
    ``__init__.py``) as that package's module, so its relative imports work; else as a module
    named after the file. Either way its folder, or the package's, comes first on ``sys.path``."""
    parts, folder = [file.stem], file.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    sys.path.insert(0, str(folder))
    if len(parts) > 1:
        return importlib.import_module(".".join(parts))
    spec = importlib.util.spec_from_file_location(file.stem, file)
    assert spec is not None and spec.loader is not None  # a .py path always has a spec
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(file.stem, module)  # pickling their functions (a worker pool) finds them
    spec.loader.exec_module(module)
    return module


def train(found: Callable[..., Any], name: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Call the trainer once; its ``(vocab, merges)``, or why not."""
    from engine.check.shapes import ShapeError, training_result

    path, vocab_size, special_tokens = request["args"]
    during = f"{name}({path!r}, {vocab_size}, {special_tokens!r})"
    started = time.perf_counter()
    try:
        value = found(path, vocab_size, list(special_tokens))
    except BaseException as e:  # the student's exception, whatever it is, is the report
        yield raised(e, during)
        return
    seconds = time.perf_counter() - started
    try:
        yield {"kind": "returned", "value": training_result(value), "seconds": seconds}
    except ShapeError as e:
        yield {"kind": "refused", "message": f"returned the wrong shape: {e}"}


def encode(found: Callable[..., Any], name: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Build the encoder (and one with the overlapping special token, when a text needs it),
    encode and decode each text; the ids and texts, or why not."""
    from engine.check.shapes import ShapeError, decode_result, encode_result

    built: dict[bool, Any] = {}
    results: list[tuple[list[int], str]] = []
    spent = 0.0
    for text_name, text, overlapping in request["texts"]:
        vocab, merges, specials = request["overlapping" if overlapping else "model"]
        if overlapping not in built:
            try:
                built[overlapping] = found(vocab, merges, specials)
            except BaseException as e:
                yield raised(e, f"{name}(vocab, merges, {specials!r})")
                return
        tokenizer = built[overlapping]
        for method in ("encode", "decode"):
            if not callable(getattr(tokenizer, method, None)):
                yield {"kind": "refused", "message": f"built an encoder with no {method} method"}
                return
        call = f"encode({text_name})"
        try:
            started = time.perf_counter()
            ids = tokenizer.encode(text)
            spent += time.perf_counter() - started
            ids = encode_result(ids, call)
            call = f"decode(encode({text_name}))"
            decoded = decode_result(tokenizer.decode(ids), call)
        except ShapeError as e:
            yield {"kind": "refused", "message": f"gave the wrong shape: {e}"}
            return
        except BaseException as e:
            yield raised(e, f"{call} of {text!r}")
            return
        results.append((ids, decoded))
    yield {"kind": "returned", "value": results, "seconds": spent}


def run(request: dict[str, Any]) -> dict[str, Any]:
    file, name, kind = Path(request["file"]), request["name"], request["kind"]
    try:
        module = load(file)
    except BaseException as e:
        return raised(e, f"importing {file.name}")
    found = getattr(module, name, None)
    if found is None:
        defined = sorted(n for n, v in vars(module).items() if callable(v) and getattr(v, "__module__", None) == module.__name__)
        them = f": it defines {', '.join(defined)}" if defined else ""
        return {"kind": "refused", "message": f"{file.name} has no {name}{them}"}
    if kind == "train" and isinstance(found, type):
        return {
            "kind": "refused",
            "message": "is a class: a trainer is a function (input_path, vocab_size, special_tokens) -> (vocab, merges); "
            "an encoder class is checked with --model DIR",
        }
    if kind == "encode" and not isinstance(found, type):
        return {
            "kind": "refused",
            "message": "is not a class: an encoder is a class (vocab, merges, special_tokens) with encode and decode; "
            "a trainer function is checked on a corpus, without --model",
        }
    return next((train if kind == "train" else encode)(found, name, request))


def main(argv: list[str]) -> int:
    request_file, result_file = argv
    with open(request_file, "rb") as f:
        request = pickle.load(f)
    result = run(request)
    try:
        data = pickle.dumps(result)
    except Exception as e:  # something of the student's that will not travel
        data = pickle.dumps({"kind": "refused", "message": f"returned what cannot be sent back ({e})"})
    with open(result_file, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # not waiting for threads or pools the student's code left running
