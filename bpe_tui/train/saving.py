"""Saving a trainer's model from a training screen's process (BPE's and Unigram's): a failure
is said in the CLI's one line (the engine's ``OutputError``: ``DIR: cannot write it (why)``),
the directory named whole as a save names it, and the screen asks for a directory again."""

from __future__ import annotations

from pathlib import Path

from bpe_tui.common.child_process import Report
from engine import BpeError
from engine.train.settings import AnyTrainer, TrainOptions
from engine.train.unigram.trainer import UnigramTrainer


def whole(directory: str | Path) -> Path:
    """``directory`` named whole, as a save names it, saved or not (the app may have been
    started elsewhere): resolved, or made absolute where a symbolic link loops (which
    Python before 3.13 refuses to resolve)."""
    try:
        return Path(directory).resolve()
    except RuntimeError:
        return Path(directory).absolute()


def save_report(options: TrainOptions, trainer: AnyTrainer | UnigramTrainer, directory: str, done: str) -> Report:
    """What a training screen's process reports of saving what ``done`` names ("merge 12"):
    a notice naming the directory whole, or ``("not saved", directory, why)``, ``why``
    naming it whole too and ``directory`` as typed, so that the screen asks for a directory
    again, starting from it."""
    path = whole(directory)
    try:
        paths = options.save(trainer, path)
    except (BpeError, OSError) as e:
        return ("not saved", directory, str(e))
    names = ", ".join(p.name for p in paths)
    return ("notice", f"saved {done} to {path}: {names}", "information")
