"""``bpe-tui train``: the training screen, or with ``--headless`` progress bars and files.

Without a FILE it trains on the bundled sample corpus (``sample_corpora/sample.txt``:
short English stories, a Chinese story and a few emoji).
"""

from __future__ import annotations

import argparse
import time
from contextlib import AbstractContextManager, nullcontext
from importlib.resources import as_file, files
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from engine import SettingsError, Tokenizer, Trainer
from engine.trainer import check_settings

DEFAULT_SPECIAL = "<|endoftext|>"
DEFAULT_OUT = "out"
SAMPLE = "sample.txt"


def sample_corpus(name: str = SAMPLE) -> AbstractContextManager[Path]:
    """A path to a bundled corpus (package data once installed, the folder in a checkout)."""
    try:
        return as_file(files("bpe_tui.sample_corpora") / name)
    except ModuleNotFoundError:  # a source checkout: the folder sits beside the package
        return nullcontext(Path(__file__).resolve().parent.parent / "sample_corpora" / name)


def run_train(args: argparse.Namespace) -> int:
    if args.resume:
        raise SettingsError("--resume is not supported yet")
    special_tokens = [DEFAULT_SPECIAL] if args.special_tokens is None else list(args.special_tokens)
    check_settings(args.vocab_size, special_tokens)
    if args.workers is not None and args.workers < 1:
        raise SettingsError("--workers must be at least 1")
    with nullcontext(Path(args.file)) if args.file else sample_corpus() as corpus:
        label = corpus.name if args.file else f"{corpus.name} (bundled sample)"
        if args.headless:
            return _headless(args, corpus, special_tokens, label)
        return _interactive(args, corpus, special_tokens, label)


def _interactive(args: argparse.Namespace, corpus: Path, special_tokens: list[str], label: str) -> int:
    from .app import BpeApp
    from .train_screen import TrainScreen

    screen = TrainScreen(
        corpus,
        args.vocab_size,
        special_tokens,
        pattern=args.pattern,
        out=args.out,
        workers=args.workers,
        errors=args.errors,
        label=label,
    )
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


def _headless(args: argparse.Namespace, corpus: Path, special_tokens: list[str], label: str) -> int:
    console = Console(stderr=True)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        TaskProgressColumn(),
        _Amount(),
        TimeRemainingColumn(),
        console=console,
        transient=True,  # the summary replaces the bars (and an error leaves just its line)
    )
    read = progress.add_task("pre-tokenizing", total=None, unit="bytes")
    merge = progress.add_task("merging", total=None, unit="merges", start=False)

    def report(phase: str, done: int, total: int) -> None:
        if phase == "read":  # parallel counters finish blocks out of order: keep the furthest
            progress.update(read, completed=max(done, progress.tasks[read].completed), total=total)
            return
        if not progress.tasks[merge].started:
            progress.update(read, completed=progress.tasks[read].total)
            progress.start_task(merge)
        progress.update(merge, completed=done, total=total)

    started = time.perf_counter()
    with progress:
        trainer = Trainer.from_file(
            corpus,
            args.vocab_size,
            special_tokens,
            pattern=args.pattern,
            workers=args.workers,
            errors=args.errors,
            progress=report,
        )
        counted = time.perf_counter()
        trainer.run()
    merged = time.perf_counter()
    out = Path(args.out or DEFAULT_OUT)
    paths = Tokenizer.from_trainer(trainer).save_dir(out)
    _summary(Console(), trainer, label, paths, counted - started, merged - counted)
    return 0


def _summary(console: Console, trainer: Trainer, label: str, paths: list[Path], read_s: float, merge_s: float) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    done = trainer.merges_done
    note = " (stopped early: no pairs left)" if trainer.stopped_early else ""
    table.add_row("corpus", f"{label}: {trainer.corpus_bytes:,} bytes")
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
    table.add_row("time", f"{read_s + merge_s:.2f} s (pre-tokenizing {read_s:.2f} s, merging {merge_s:.2f} s)")
    table.add_row("written", "\n".join(str(p) for p in paths))
    console.print(table)
