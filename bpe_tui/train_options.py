"""What a training run is asked for, shared by the headless run, the training screen, the
screen's trainer process and the race (each imports this; none imports another for it)."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

from engine import ResumeError, SettingsError, Trainer
from engine.corpus import Progress as EngineProgress
from engine.corpus import open_corpus
from engine.trainer import check_settings, count_corpus, first_merge_id

DEFAULT_SPECIAL = "<|endoftext|>"
SAMPLE = "sample.txt"
Merges = list[tuple[bytes, bytes]]


def sample_corpus(name: str = SAMPLE) -> AbstractContextManager[Path]:
    """A path to a bundled corpus (package data once installed, the folder in a checkout)."""
    try:
        return as_file(files("bpe_tui.sample_corpora") / name)
    except ModuleNotFoundError:  # a source checkout: the folder sits beside the package
        return nullcontext(Path(__file__).resolve().parent.parent / "sample_corpora" / name)


@contextmanager
def chosen_corpus(file: str | None) -> Iterator[tuple[Path, str]]:
    """The corpus named on the command line (a missing file is one line now, before any
    screen opens), or the bundled sample; with the label screens show for it."""
    if file:
        open_corpus(file).close()
        yield Path(file), Path(file).name
    else:
        with sample_corpus() as path:
            yield path, f"{path.name} (bundled sample)"


@dataclass(frozen=True)
class TrainOptions:
    """What a training run is asked for on the command line: carried as one value to the
    headless run, the training screen and the screen's trainer process."""

    vocab_size: int
    special_tokens: tuple[str, ...]
    pattern: str = "gpt2"
    workers: int | None = None
    errors: str = "strict"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TrainOptions:
        """The options of ``bpe-tui train`` or ``race``; ``SettingsError`` for impossible ones."""
        special_tokens = (DEFAULT_SPECIAL,) if args.special_tokens is None else tuple(args.special_tokens)
        check_settings(args.vocab_size, special_tokens)
        if args.workers is not None and args.workers < 1:
            raise SettingsError("--workers must be at least 1")
        return cls(args.vocab_size, special_tokens, args.pattern, args.workers, args.errors)

    @property
    def merges_planned(self) -> int:
        return self.vocab_size - first_merge_id(self.special_tokens)

    def count(self, corpus: Path, progress: EngineProgress | None = None) -> Counter[bytes]:
        """The pre-token counts of ``corpus`` with these settings."""
        return count_corpus(corpus, self.special_tokens, self.pattern, self.workers, progress, self.errors)

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
