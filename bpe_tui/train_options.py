"""What a training run is asked for, shared by the headless run, the training screen and the
screen's trainer process (each imports this; none imports another for it)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

from engine import ResumeError, Trainer
from engine.corpus import Progress as EngineProgress
from engine.shards import CountSettings, first_text, plan_shards
from engine.sources import expand_inputs
from engine.trainer import first_merge_id

DEFAULT_SPECIAL = "<|endoftext|>"
SAMPLE = "sample.txt"
Merges = list[tuple[bytes, bytes]]
Inputs = Sequence[str | Path]
"""Corpus files, directories and glob patterns."""


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
    text_field: str = "text"
    skip_bad_records: bool = False
    counts: str | None = None
    """Saved counts to train from instead of reading a corpus."""
    save_counts: str | None = None
    """Where to save the corpus's counts once they are counted."""
    dask: str | None = None
    """Count on a Dask cluster: ``local[:N]`` or a scheduler address."""

    @property
    def merges_planned(self) -> int:
        return self.vocab_size - first_merge_id(self.special_tokens)

    @property
    def count_settings(self) -> CountSettings:
        return CountSettings(self.pattern, self.special_tokens, self.text_field, self.errors, self.skip_bad_records)

    def load(self, inputs: Inputs, progress: EngineProgress | None = None) -> Trainer:
        """Count ``inputs`` (or load ``counts``) into a trainer at merge 0."""
        if self.counts is not None:
            return Trainer.from_counts_file(self.counts, self.vocab_size, self.special_tokens, self.pattern, progress)
        return Trainer.from_files(
            inputs,
            self.vocab_size,
            self.special_tokens,
            pattern=self.pattern,
            workers=self.workers,
            errors=self.errors,
            progress=progress,
            text_field=self.text_field,
            skip_bad_records=self.skip_bad_records,
            save_counts=self.save_counts,
            dask=self.dask,
        )

    def opening_text(self, inputs: Inputs, chars: int = 240) -> str | None:
        """The start of the first document, cut at a line or word end: something to encode
        (None when training from saved counts: there is no text)."""
        if not inputs:
            return None
        settings = self.count_settings
        shards = plan_shards(expand_inputs(inputs), settings)
        text = next((t for t in (first_text(shard, settings, chars) for shard in shards) if t), "")
        cut = max(text.rfind("\n"), text.rfind(" "))
        return text[:cut] if len(text) == chars and cut > 0 else text


def replay_saved(trainer: Trainer, merges: Merges, saved: str, corpus: str) -> None:
    """Redo a saved run's merges on ``trainer``; ``ResumeError`` if it would choose others."""
    if not trainer.replay(merges):
        raise ResumeError(
            f"{saved}: its merges are not the ones {corpus} gives with these settings (another corpus, "
            "or other --errors?): resume it on the corpus it was trained on, or train from scratch"
        )
