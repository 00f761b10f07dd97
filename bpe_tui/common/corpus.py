"""The corpus a command trains on: the files named, or a bundled sample, and the options
``train`` and ``race`` share, turned into the engine's checked ``TrainOptions`` in one step."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from importlib.resources import as_file, files
from pathlib import Path

from engine.corpus.sources import expand_inputs
from engine.corpus.sources import label as name_files
from engine.train.settings import TrainOptions

SAMPLE = "sample.txt"


def sample_corpus(name: str = SAMPLE) -> AbstractContextManager[Path]:
    """A path to a bundled corpus (package data once installed, the folder in a checkout)."""
    try:
        return as_file(files("bpe_tui.sample_corpora") / name)
    except ModuleNotFoundError:  # a source checkout: the folder sits beside the package
        return nullcontext(Path(__file__).resolve().parents[2] / "sample_corpora" / name)


@contextmanager
def chosen_corpus(inputs: Sequence[str], options: TrainOptions) -> Iterator[tuple[list[str], str]]:
    """The corpus inputs named on the command line (as given: the engine expands them, and
    tells what it skipped), or the bundled sample when there are none (and no saved counts),
    with the label screens show for them. Missing and bad files, globs that match nothing and
    unknown extensions are one line now, before any screen opens."""
    if options.counts is not None:
        yield [], f"{Path(options.counts).name} (saved counts)"
    elif inputs:
        names = [source.path for source in expand_inputs(inputs, options.skip_bad_inputs, options.stdin_format)]
        yield list(inputs), name_files([Path(names[0]).name, *names[1:]])
    else:
        with sample_corpus() as path:
            yield [str(path)], f"{path.name} (bundled sample)"


def options_from_args(args: argparse.Namespace) -> TrainOptions:
    """The options of ``bpe-tui train`` or ``race``, checked by the engine; ``SettingsError``
    names the first that cannot work."""
    return TrainOptions.checked(
        args.inputs,
        args.vocab_size,
        args.special_tokens,
        args.pattern,
        args.workers,
        args.errors,
        args.text_field,
        args.skip_bad_records,
        counts=getattr(args, "counts", None),
        save_counts=getattr(args, "save_counts", None),
        dask=getattr(args, "dask", None),
        classic=getattr(args, "classic", False),
        words=getattr(args, "words", None),
        resume=getattr(args, "resume", None),
        skip_bad_inputs=args.skip_bad_inputs,
        stdin_format=args.stdin_format,
        algorithm=getattr(args, "algorithm", None),
        lowercase=getattr(args, "lowercase", False),
        max_memory=getattr(args, "max_memory", None),
    )
