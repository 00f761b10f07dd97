"""What a training run is asked for, shared by the headless run, the training screen and the
screen's trainer process (each imports this; none imports another for it)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

from engine import ResumeError, Tokenizer, Trainer
from engine.classic import ClassicTrainer
from engine.corpus import Progress as EngineProgress
from engine.trainer import first_merge_id

from .train_snapshot import SteppableTrainer

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
    classic: str | None = None
    """Classic word-level BPE with ``</w>``, its words cut this way ("whitespace" or
    "punct"); None: byte-level BPE."""

    @property
    def merges_planned(self) -> int | None:
        """None for classic BPE until its corpus is read: its alphabet comes from the text."""
        return None if self.classic else self.vocab_size - first_merge_id(self.special_tokens)

    @property
    def saves(self) -> str:
        """The files a save writes."""
        return "classic_bpe.json" if self.classic else "tokenizer.json, vocab.json and merges.txt"

    @property
    def can_encode(self) -> bool:
        """Whether the trained model opens in the (byte-level) encode view."""
        return not self.classic

    def load(self, corpus: Path, progress: EngineProgress | None = None) -> SteppableTrainer:
        """Count ``corpus`` into a trainer at merge 0."""
        if self.classic:
            return ClassicTrainer.from_file(corpus, self.vocab_size, self.classic, progress, self.errors)
        return Trainer.from_file(
            corpus,
            self.vocab_size,
            self.special_tokens,
            pattern=self.pattern,
            workers=self.workers,
            errors=self.errors,
            progress=progress,
        )

    def save(self, trainer: SteppableTrainer, directory: str | Path) -> list[Path]:
        """Write the model as trained so far to ``directory``, each file atomically."""
        if isinstance(trainer, ClassicTrainer):
            return [trainer.model().save(directory)]
        assert isinstance(trainer, Trainer)
        return Tokenizer.from_trainer(trainer).save_dir(directory)


def replay_saved(trainer: Trainer, merges: Merges, saved: str, corpus: Path) -> None:
    """Redo a saved run's merges on ``trainer``; ``ResumeError`` if it would choose others."""
    if not trainer.replay(merges):
        raise ResumeError(
            f"{saved}: its merges are not the ones {corpus} gives with these settings (another corpus, "
            "or other --errors?): resume it on the corpus it was trained on, or train from scratch"
        )
