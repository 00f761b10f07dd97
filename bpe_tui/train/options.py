"""What a training run is asked for, shared by the headless run, the training screen, the
screen's trainer process and the race (each imports this; none imports another for it)."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

from bpe_tui.train.snapshot import SteppableTrainer
from engine import ResumeError, SettingsError, Tokenizer, Trainer
from engine.corpus.counting import Progress as EngineProgress
from engine.corpus.shards import CountSettings, first_text, plan_shards
from engine.corpus.sources import expand_inputs
from engine.corpus.sources import label as name_files
from engine.train.classic import ClassicTrainer
from engine.train.trainer import check_settings, count_corpus, first_merge_id, load_saved_counts

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
        return nullcontext(Path(__file__).resolve().parents[2] / "sample_corpora" / name)


@contextmanager
def chosen_corpus(inputs: Sequence[str], counts: str | None = None) -> Iterator[tuple[list[str], str]]:
    """The corpus files named on the command line, or the bundled sample when there are none
    (and no saved ``counts``), with the label screens show for them. Missing files, globs
    that match nothing and unknown extensions are one line now, before any screen opens."""
    if counts is not None:
        yield [], f"{Path(counts).name} (saved counts)"
    elif inputs:
        names = [source.path for source in expand_inputs(inputs)]
        yield names, name_files([Path(names[0]).name, *names[1:]])
    else:
        with sample_corpus() as path:
            yield [str(path)], f"{path.name} (bundled sample)"


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
    classic: str | None = None
    """Classic word-level BPE with ``</w>``, its words cut this way ("whitespace" or
    "punct"); None: byte-level BPE."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TrainOptions:
        """The options of ``bpe-tui train`` or ``race``; ``SettingsError`` for impossible ones."""
        special_tokens = (DEFAULT_SPECIAL,) if args.special_tokens is None else tuple(args.special_tokens)
        check_settings(args.vocab_size, special_tokens)
        if args.workers is not None and args.workers < 1:
            raise SettingsError("--workers must be at least 1")
        counts, save_counts = getattr(args, "counts", None), getattr(args, "save_counts", None)
        if counts and args.inputs:
            raise SettingsError("--counts trains from saved counts: give it no corpus files")
        if counts and save_counts:
            raise SettingsError("--save-counts saves the counts of a corpus: it does not go with --counts")
        return cls(
            args.vocab_size,
            special_tokens,
            args.pattern or "gpt2",
            args.workers,
            args.errors,
            args.text_field,
            args.skip_bad_records,
            counts,
            save_counts,
            getattr(args, "dask", None),
        )

    @property
    def merges_planned(self) -> int | None:
        """None for classic BPE until its corpus is read: its alphabet comes from the text."""
        return None if self.classic else self.vocab_size - first_merge_id(self.special_tokens)

    @property
    def count_settings(self) -> CountSettings:
        return CountSettings(self.pattern, self.special_tokens, self.text_field, self.errors, self.skip_bad_records)

    def count(self, inputs: Inputs, progress: EngineProgress | None = None) -> Counter[bytes]:
        """The pre-token counts of ``inputs`` (or the saved ``counts``) with these settings."""
        if self.counts is not None:
            return load_saved_counts(self.counts, self.pattern, self.special_tokens).counts
        return count_corpus(inputs, self.count_settings, self.workers, progress, self.dask)[0].counter()

    @property
    def saves(self) -> str:
        """The files a save writes."""
        return "classic_bpe.json" if self.classic else "tokenizer.json, vocab.json and merges.txt"

    @property
    def byte_level(self) -> bool:
        """Byte-level BPE: its model opens in the encode view, and where its pairs lie shows
        in the pair-in-the-corpus panel (classic BPE has neither)."""
        return not self.classic

    def load(self, inputs: Inputs, progress: EngineProgress | None = None) -> SteppableTrainer:
        """Count ``inputs`` (or load ``counts``) into a trainer at merge 0."""
        if self.classic:
            return ClassicTrainer.from_file(inputs[0], self.vocab_size, self.classic, progress, self.errors)
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

    def save(self, trainer: SteppableTrainer, directory: str | Path) -> list[Path]:
        """Write the model as trained so far to ``directory``, each file atomically."""
        if isinstance(trainer, ClassicTrainer):
            return [trainer.model().save(directory)]
        assert isinstance(trainer, Trainer)
        return Tokenizer.from_trainer(trainer).save_dir(directory)


def replay_saved(trainer: Trainer, merges: Merges, saved: str, corpus: str) -> None:
    """Redo a saved run's merges on ``trainer``; ``ResumeError`` if it would choose others."""
    if not trainer.replay(merges):
        raise ResumeError(
            f"{saved}: its merges are not the ones {corpus} gives with these settings (another corpus, "
            "or other --errors?): resume it on the corpus it was trained on, or train from scratch"
        )
