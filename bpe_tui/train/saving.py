"""Saving a trainer's model into a directory, a failure said in the CLI's one line.

``bpe-tui train --headless`` and the training screens' processes (BPE's and Unigram's)
save through ``save``, so a directory that cannot be made reads the same in both:
``DIR: cannot write it (why)``.
"""

from __future__ import annotations

from pathlib import Path

from bpe_tui.common.child_process import Report
from engine import BpeError, OutputError
from engine.formats.atomic import cannot_write
from engine.train.settings import AnyTrainer, TrainOptions
from engine.train.unigram.trainer import UnigramTrainer


def save(options: TrainOptions, trainer: AnyTrainer | UnigramTrainer, directory: str | Path) -> list[Path]:
    """Write the model as trained so far into ``directory``, made if need be."""
    try:
        return options.save(trainer, directory)
    except OSError as e:  # making the directory; a file that failed is an OutputError already
        raise e if isinstance(e, OutputError) else cannot_write(directory, e) from None


def save_report(options: TrainOptions, trainer: AnyTrainer | UnigramTrainer, directory: str, done: str) -> Report:
    """What a training screen's process reports of saving what ``done`` names ("merge 12"):
    a notice naming the directory whole (the app may have been started elsewhere), or
    ``("not saved", directory, why)``, so that the screen asks for a directory again."""
    try:
        paths = save(options, trainer, directory)
    except (BpeError, OSError) as e:
        return ("not saved", directory, str(e))
    names = ", ".join(p.name for p in paths)
    return ("notice", f"saved {done} to {Path(directory).resolve()}: {names}", "information")
