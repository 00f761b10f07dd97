"""What a training run is asked for, shared by the headless run, the training screen and the
screen's trainer process (each imports this; none imports another for it)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

from engine import ResumeError, Trainer
from engine.corpus import Progress as EngineProgress
from engine.trainer import first_merge_id

DEFAULT_SPECIAL = "<|endoftext|>"
SAMPLE = "sample.txt"
Merges = list[tuple[bytes, bytes]]


def sample_corpus(name: str = SAMPLE) -> AbstractContextManager[Path]:
    """A path to a bundled corpus (package data once installed, the folder in a checkout)."""
    try:
        return as_file(files("bpe_tui.sample_corpora") / name)
    except ModuleNotFoundError:  # a source checkout: the folder sits beside the package
        return nullcontext(Path(__file__).resolve().parent.parent / "sample_corpora" / name)


@dataclass(frozen=True)
class TrainOptions:
    """What a training run is asked for on the command line: carried as one value to the
    headless run, the training screen and the screen's trainer process."""

    vocab_size: int
    special_tokens: tuple[str, ...]
    pattern: str = "gpt2"
    workers: int | None = None
    errors: str = "strict"

    @property
    def merges_planned(self) -> int:
        return self.vocab_size - first_merge_id(self.special_tokens)

    def load(self, corpus: Path, progress: EngineProgress | None = None) -> Trainer:
        """Count ``corpus`` into a trainer at merge 0."""
        return Trainer.from_file(
            corpus,
            self.vocab_size,
            self.special_tokens,
            pattern=self.pattern,
            workers=self.workers,
            errors=self.errors,
            progress=progress,
        )


def replay_saved(trainer: Trainer, merges: Merges, saved: str, corpus: Path) -> None:
    """Redo a saved run's merges on ``trainer``; ``ResumeError`` if it would choose others."""
    if not trainer.replay(merges):
        raise ResumeError(
            f"{saved}: its merges are not the ones {corpus} gives with these settings (another corpus, "
            "or other --errors?): resume it on the corpus it was trained on, or train from scratch"
        )
