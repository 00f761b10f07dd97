"""Saving a trainer's model from a training screen's process (BPE's and Unigram's): a failure
is said in the CLI's one line (the engine's ``OutputError``: ``DIR: cannot write it (why)``),
and the screen asks for a directory again."""

from __future__ import annotations

from pathlib import Path

from bpe_tui.common.child_process import Report
from engine import BpeError
from engine.train.settings import AnyTrainer, TrainOptions
from engine.train.unigram.trainer import UnigramTrainer


def save_report(options: TrainOptions, trainer: AnyTrainer | UnigramTrainer, directory: str, done: str) -> Report:
    """What a training screen's process reports of saving what ``done`` names ("merge 12"):
    a notice naming the directory whole (the app may have been started elsewhere), or
    ``("not saved", directory, why)``, so that the screen asks for a directory again."""
    try:
        paths = options.save(trainer, directory)
    except (BpeError, OSError) as e:
        return ("not saved", directory, str(e))
    names = ", ".join(p.name for p in paths)
    return ("notice", f"saved {done} to {Path(directory).resolve()}: {names}", "information")
