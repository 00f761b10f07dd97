"""``bpe-tui train``: the training screen, or with ``--headless`` progress bars and files.

Without a FILE it trains on the bundled sample corpus (``sample_corpora/sample.txt``:
short English stories, a Chinese story and a few emoji).

Headless, SIGINT (Ctrl-C) or SIGTERM stops at the next merge boundary, saves what is trained
so far and exits 130; ``--resume DIR`` continues such a run to the very tokenizer an
uninterrupted run gives.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from engine import BpeError, ResumeError, SettingsError, Tokenizer, Trainer
from engine.sources import expand_inputs
from engine.sources import label as name_files
from engine.trainer import check_settings

from .train_options import DEFAULT_SPECIAL, Merges, TrainOptions, replay_saved, sample_corpus

DEFAULT_OUT = "out"


def run_train(args: argparse.Namespace) -> int:
    special_tokens = [DEFAULT_SPECIAL] if args.special_tokens is None else list(args.special_tokens)
    check_settings(args.vocab_size, special_tokens)
    if args.workers is not None and args.workers < 1:
        raise SettingsError("--workers must be at least 1")
    if args.counts and args.inputs:
        raise SettingsError("--counts trains from saved counts: give it no corpus files")
    if args.counts and args.save_counts:
        raise SettingsError("--save-counts saves the counts of a corpus: it does not go with --counts")
    if args.dask is not None:
        _check_dask(args)
    options = TrainOptions(
        args.vocab_size, tuple(special_tokens), args.pattern, args.workers, args.errors,
        args.text_field, args.skip_bad_records, args.counts, args.save_counts, args.dask,
    )
    resume = _saved_merges(args, options) if args.resume else None
    if args.resume and args.out is None:  # a resumed run goes on in its own directory
        args.out = args.resume if Path(args.resume).is_dir() else str(Path(args.resume).parent)
    if args.out is not None or args.headless:
        _check_out(Path(args.out or DEFAULT_OUT))
    if args.save_counts:
        _check_counts_path(Path(args.save_counts))
    # Missing files, globs that match nothing, unknown extensions: one line, before any screen opens.
    names = [s.path for s in expand_inputs(args.inputs)] if args.inputs else []
    with nullcontext(names) if args.inputs or args.counts else _bundled_sample() as inputs:
        name = _label(args, inputs)
        if args.headless:
            return _headless(args, options, inputs, name, resume)
        return _interactive(args, options, inputs, name, resume)


@contextmanager
def _bundled_sample() -> Iterator[list[str]]:
    with sample_corpus() as corpus:
        yield [str(corpus)]


def _label(args: argparse.Namespace, inputs: list[str]) -> str:
    """How the screen and the summary name what is trained on."""
    if args.counts:
        return f"{Path(args.counts).name} (saved counts)"
    if not args.inputs:
        return f"{Path(inputs[0]).name} (bundled sample)"
    first = Path(inputs[0]).name
    return name_files([first, *inputs[1:]])


def _check_dask(args: argparse.Namespace) -> None:
    """Refuse --dask with options it cannot go with, or a value that cannot work, up front."""
    if args.counts:
        raise SettingsError("--dask counts a corpus: it does not go with --counts")
    if args.workers is not None:
        raise SettingsError("--workers sets the processes counting on this machine: with --dask the cluster counts")
    from engine.dask_count import check_target

    check_target(args.dask)


def _check_counts_path(path: Path) -> None:
    """Refuse a --save-counts path that cannot be written now, not after the counting."""
    if path.is_dir():
        raise SettingsError(f"--save-counts {path}: is a directory, not a file")
    if not path.parent.is_dir():
        raise SettingsError(f"--save-counts {path}: {path.parent} is not a directory")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise SettingsError(f"--save-counts {path}: {path.parent} is not writable")


def _check_out(out: Path) -> None:
    """Refuse an output directory that cannot be written now, not after the training."""
    if out.exists() and not out.is_dir():
        raise SettingsError(f"--out {out}: exists and is not a directory")
    existing = next(p for p in (out, *out.parents) if p.exists())
    if not existing.is_dir():
        raise SettingsError(f"--out {out}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SettingsError(f"--out {out}: {existing} is not writable")


def _saved_merges(args: argparse.Namespace, options: TrainOptions) -> Merges:
    """The merges saved in ``--resume``, once its settings are found to match these."""
    saved = Tokenizer.load(args.resume)
    where = args.resume
    if saved.pattern != options.pattern:
        raise ResumeError(f"{where}: trained with --pattern {saved.pattern}, not {options.pattern}: resume with the same settings")
    special_tokens = list(options.special_tokens)
    if saved.special_tokens != special_tokens:
        raise ResumeError(
            f"{where}: trained with special tokens {saved.special_tokens}, not {special_tokens}: resume with the same settings"
        )
    if len(saved.merges) > options.merges_planned:
        raise ResumeError(f"{where}: has {len(saved.merges):,} merges already, more than --vocab-size {args.vocab_size} leaves room for")
    return saved.merges


def _interactive(args: argparse.Namespace, options: TrainOptions, inputs: list[str], label: str, resume: Merges | None) -> int:
    from .app import BpeApp
    from .train_screen import TrainScreen

    screen = TrainScreen(inputs, options, out=args.out, label=label, resume=None if resume is None else (args.resume, resume))
    app = BpeApp(screen)
    app.run()
    if app.failure is not None:
        raise app.failure
    return app.return_code or 0


class _Amount(ProgressColumn):
    """Done/total and rate in the task's own unit: bytes while reading, merges after."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        speed = task.completed / elapsed if elapsed else 0
        if task.fields.get("unit") == "bytes":
            return Text(f"{task.completed / 1e6:,.1f}/{(task.total or 0) / 1e6:,.1f} MB  {speed / 1e6:,.1f} MB/s")
        return Text(f"{task.completed:,.0f}/{task.total or 0:,.0f}  {speed:,.0f}/s")


@contextmanager
def _stop_on_signals(trainer: list[Trainer]) -> Iterator[None]:
    """SIGINT and SIGTERM ask the trainer in ``trainer`` (once there is one) to stop at the
    next merge boundary; before that there is nothing to save, so they interrupt at once."""

    def stop(signum: int, frame: object) -> None:
        if not trainer:
            raise KeyboardInterrupt
        trainer[0].stop_requested = True

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _headless(args: argparse.Namespace, options: TrainOptions, inputs: list[str], label: str, resume: Merges | None) -> int:
    console = Console(stderr=True)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        TaskProgressColumn(),
        _Amount(),
        TimeRemainingColumn(),
        console=console,
        transient=True,  # the summary replaces the bars (and an error leaves just its line)
        disable=not console.is_terminal,  # transient bars leave a file nothing but a blank line
    )
    read = progress.add_task("pre-tokenizing", total=None, unit="bytes")
    merge = progress.add_task("merging", total=None, unit="merges", start=False)

    def report(phase: str, done: int, total: int) -> None:
        if phase == "read":
            progress.update(read, completed=done, total=total)
            return
        if not progress.tasks[merge].started:
            progress.update(read, completed=progress.tasks[read].total)
            progress.start_task(merge)
        progress.update(merge, completed=done, total=total)

    started = time.perf_counter()
    holder: list[Trainer] = []
    try:
        with _stop_on_signals(holder), progress:
            trainer = options.load(inputs, report)
            holder.append(trainer)
            if resume is not None:
                replay_saved(trainer, resume, args.resume, label)
            counted = time.perf_counter()
            trainer.run()
            merged = time.perf_counter()
            out = Path(args.out or DEFAULT_OUT)
            try:
                paths = Tokenizer.from_trainer(trainer).save_dir(out)
            except OSError as e:
                raise BpeError(f"{out}: cannot write the tokenizer ({e.strerror or e})") from None
    except KeyboardInterrupt:
        print(f"bpe-tui: interrupted while pre-tokenizing {label}: nothing trained, nothing saved", file=sys.stderr)
        return 130
    _summary(Console(), trainer, label, paths, counted - started, merged - counted, options)
    bad = trainer.summary.bad_records if trainer.summary else 0
    if options.skip_bad_records and not options.counts:
        print(f"bpe-tui: skipped {bad:,} bad record{'' if bad == 1 else 's'} (--skip-bad-records)", file=sys.stderr)
    if trainer.stop_requested and not trainer.finished:
        print(
            f"bpe-tui: interrupted at merge {trainer.merges_done:,} of {trainer.merges_planned:,}: saved to {out}; "
            f"continue with --resume {out}",
            file=sys.stderr,
        )
        return 130
    return 0


def _summary(
    console: Console, trainer: Trainer, label: str, paths: list[Path], read_s: float, merge_s: float, options: TrainOptions
) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    done = trainer.merges_done
    note = " (stopped early: no pairs left)" if trainer.stopped_early else ""
    table.add_row("corpus", f"{label}: {trainer.corpus_bytes:,} bytes")
    counted = trainer.summary
    if counted is not None:
        files = len(counted.inputs)
        table.add_row("inputs", f"{files:,} file{'' if files == 1 else 's'}, {counted.bytes_read:,} bytes, digest {counted.digest[:16]}")
        if options.skip_bad_records or counted.bad_records:
            table.add_row("bad records", f"{counted.bad_records:,} skipped")
    if options.save_counts:
        table.add_row("counts", f"saved to {options.save_counts} (train again with --counts)")
    table.add_row("merges", f"{done:,} of {trainer.merges_planned:,}{note}")
    table.add_row(
        "vocabulary",
        f"{len(trainer.vocab):,} tokens (256 bytes + {len(trainer.special_tokens)} special + {done:,} merges)",
    )
    table.add_row(
        "compression",
        f"{trainer.corpus_bytes / max(1, trainer.tokens_in_corpus):.2f} bytes/token "
        f"({trainer.corpus_bytes:,} bytes → {trainer.tokens_in_corpus:,} tokens)",
    )
    first = "loading the counts" if options.counts else "pre-tokenizing"
    table.add_row("time", f"{read_s + merge_s:.2f} s ({first} {read_s:.2f} s, merging {merge_s:.2f} s)")
    table.add_row("written", "\n".join(str(p) for p in paths))
    console.print(table)
