"""``bpe-tui train``: the training screen, or with ``--headless`` progress bars and files.

Without a FILE it trains on the bundled sample corpus (``sample_corpora/sample.txt``:
short English stories, a Chinese story and a few emoji).

Headless, SIGINT (Ctrl-C) or SIGTERM stops at the next merge boundary (Unigram's: the next
round's end), saves what is trained so far and exits 130; ``--resume DIR`` continues such a
byte-level run to the very tokenizer an uninterrupted run gives. ``-`` reads the corpus from
standard input (headless only: the app reads the keyboard there). Saving over tokenizer
files says on stderr which it replaced.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Protocol

from rich.console import Console
from rich.filesize import decimal
from rich.table import Table

from bpe_tui.common.corpus import chosen_corpus, options_from_args
from bpe_tui.common.durations import show_seconds
from bpe_tui.common.peak_memory import peak_memory
from bpe_tui.common.progress_bars import progress_bars
from bpe_tui.common.replaced import existing, say_replaced
from bpe_tui.train.snapshot import SteppableTrainer
from bpe_tui.train.trace import check_trace_name, trace_of, trace_text
from engine import SettingsError, Trainer
from engine.corpus.characters import CharacterCounts
from engine.corpus.counts_file import kept_counts_folder
from engine.corpus.runs import holds_runs
from engine.corpus.sources import STDIN
from engine.formats.atomic import atomic_write, check_writable_file
from engine.train.classic import ClassicTrainer
from engine.train.settings import Merges, TrainOptions, replay_saved
from engine.train.trace import MergeRecord, merge_record
from engine.train.unigram.rule import EXPECTED_THRESHOLD
from engine.train.unigram.trainer import UnigramTrainer
from engine.train.wordpiece.trainer import WordPieceTrainer

DEFAULT_OUT = "out"


def run_train(args: argparse.Namespace) -> int:
    options, resume = prepare(args)
    with chosen_corpus(args.inputs, options) as (inputs, name):
        if args.headless and options.algorithm == "unigram":
            return _headless_unigram(args, options, inputs, name)
        if args.headless:
            return _headless(args, options, inputs, name, resume)
        return _interactive(args, options, inputs, name, resume)


def prepare(args: argparse.Namespace) -> tuple[TrainOptions, Merges | None]:
    """Check the options and every path named, before a screen opens (or a server starts):
    the options once, in the engine; then the run to resume and where the files go."""
    if STDIN in args.inputs and not args.headless:
        raise SettingsError("-: the app reads the keyboard from standard input: reading the corpus from it needs --headless")
    options = options_from_args(args)
    resume = options.saved_merges(args.resume) if args.resume else None
    if args.resume and args.out is None:  # a resumed run goes on in its own directory
        args.out = args.resume if Path(args.resume).is_dir() else str(Path(args.resume).parent)
    if args.out is not None or args.headless:
        options.check_out(args.out or DEFAULT_OUT)
    if args.trace is not None:
        if options.algorithm == "unigram":
            raise SettingsError("--trace writes merges: Unigram trains by rounds of EM and pruning, with no merges to write")
        if not args.headless:
            raise SettingsError("--trace is for --headless runs: on the training screen, t exports the merges so far")
        check_trace_name(args.trace)
        check_writable_file(Path(args.trace), "--trace")
    if args.follow and not options.byte_level:
        flag = "--classic" if options.classic else f"--algorithm {options.algorithm}"
        raise SettingsError(f"--follow follows words through byte-level BPE: not with {flag}")
    if "" in args.follow:
        raise SettingsError("--follow '': give a word to follow (--follow tokenization)")
    return options, resume


def load_ahead(args: argparse.Namespace) -> None:
    """Read a served ``train``'s corpus once, in the warm parent every browser tab forks
    from, into the trainer at merge 0 each tab's trainer starts as."""
    options, _ = prepare(args)
    with chosen_corpus(args.inputs, options) as (inputs, _):
        options.load_ahead(inputs)


def _interactive(args: argparse.Namespace, options: TrainOptions, inputs: list[str], label: str, resume: Merges | None) -> int:
    from bpe_tui.app import BpeApp
    from bpe_tui.train.screen import TrainScreen
    from bpe_tui.train.unigram.screen import UnigramTrainScreen

    screen: TrainScreen | UnigramTrainScreen
    if options.algorithm == "unigram":  # rounds of EM and pruning: a screen of its own
        screen = UnigramTrainScreen(inputs, options, out=args.out, label=label)
    else:
        resumed = None if resume is None else (args.resume, resume)
        screen = TrainScreen(inputs, options, out=args.out, label=label, resume=resumed, follow=args.follow)
    app = BpeApp(screen)
    app.run()
    if app.failure is not None:
        raise app.failure
    return app.return_code or 0


class _Stoppable(Protocol):
    stop_requested: bool


@contextmanager
def _stop_on_signals(trainer: Sequence[_Stoppable]) -> Iterator[None]:
    """SIGINT and SIGTERM ask the trainer in ``trainer`` (once there is one) to stop at the
    next merge boundary (or round's end); before that there is nothing to save, so they
    interrupt at once."""

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
    progress = progress_bars(console)
    read = progress.add_task("pre-tokenizing", total=None, unit="bytes")
    merge = progress.add_task("merging", total=None, unit="merges", start=False)

    def report(phase: str, done: int, total: int | None) -> None:
        if phase == "read":
            progress.update(read, completed=done, total=total)
            return
        if not progress.tasks[merge].started:
            reading = progress.tasks[read]
            progress.update(read, total=reading.total or reading.completed, completed=reading.total or reading.completed)
            progress.start_task(merge)
        progress.update(merge, completed=done, total=total)

    started = time.perf_counter()
    holder: list[SteppableTrainer] = []
    try:
        with _stop_on_signals(holder), progress:
            trainer = options.load(inputs, report)
            holder.append(trainer)
            if resume is not None:
                assert isinstance(trainer, Trainer)  # the command refuses --resume with --classic
                replay_saved(trainer, resume, args.resume, label)
                if trainer.stop_requested:  # before it was back where the saved run stopped: nothing new to save
                    redoing = f"redoing the {len(resume):,} merges saved in {args.resume}"
                    print(f"bpe-tui: interrupted while {redoing}: nothing saved", file=sys.stderr)
                    return 130
            counted = time.perf_counter()
            records = _recorded_run(trainer) if args.trace else None
            if records is None:
                trainer.run()
            merged = time.perf_counter()
            out = Path(args.out or DEFAULT_OUT)
            replaced = existing(out / name for name in options.file_names)
            paths = options.save(trainer, out)
    except KeyboardInterrupt:
        print(f"bpe-tui: interrupted while pre-tokenizing {label}: {_kept_after_stop(options)}", file=sys.stderr)
        return 130
    if records is not None:
        chars = CharacterCounts.from_table(trainer.word_table()) if isinstance(trainer, Trainer) else None
        paths.append(atomic_write(args.trace, trace_text(args.trace, records, trace_of(label, options), chars)))
    _summary(Console(), trainer, label, paths, counted - started, merged - counted, options)
    say_replaced(replaced)
    bad = trainer.summary.bad_records if trainer.summary else 0
    if options.skip_bad_records and not options.counts:
        print(f"bpe-tui: skipped {bad:,} bad record{'' if bad == 1 else 's'} (--skip-bad-records)", file=sys.stderr)
    skipped = len(trainer.summary.skipped_inputs) if trainer.summary else 0
    if options.skip_bad_inputs:
        print(f"bpe-tui: skipped {skipped:,} bad input{'' if skipped == 1 else 's'} (--skip-bad-inputs)", file=sys.stderr)
    if trainer.stop_requested and not trainer.finished:
        resume_hint = f"; continue with --resume {out}" if options.byte_level else ""
        print(
            f"bpe-tui: interrupted at merge {trainer.merges_done:,} of {trainer.merges_planned:,}: saved to {out}{resume_hint}",
            file=sys.stderr,
        )
        return 130
    return 0


def _kept_after_stop(options: TrainOptions) -> str:
    """What a count stopped before training leaves: with ``--save-counts``, the runs kept so
    far, which the same command takes up again."""
    if options.save_counts is None or not holds_runs(kept := kept_counts_folder(options.save_counts)):
        return "nothing trained, nothing saved"
    return f"nothing trained; the counts so far are kept in {kept}: run the same command again to go on from them"


def _headless_unigram(args: argparse.Namespace, options: TrainOptions, inputs: list[str], label: str) -> int:
    """Unigram without a screen: the words read, then rounds of EM and pruning until the
    vocabulary size; a bar of the pieces pruning has removed; the summary and the file."""
    console = Console(stderr=True)
    progress = progress_bars(console)
    read = progress.add_task("reading words", total=None, unit="bytes")
    prune = progress.add_task("EM and pruning", total=None, unit="pieces", start=False)
    holder: list[UnigramTrainer] = []

    def report(phase: str, done: int, total: int | None) -> None:
        if phase == "read":
            progress.update(read, completed=done, total=total)
        elif holder:
            trainer = holder[0]
            progress.update(prune, description=f"EM and pruning, round {done}", completed=seeded - trainer.size)

    started = time.perf_counter()
    try:
        with _stop_on_signals(holder), progress:
            trainer = options.load_unigram(inputs, report)
            holder.append(trainer)
            reading = progress.tasks[read]
            progress.update(read, total=reading.total or reading.completed, completed=reading.total or reading.completed)
            seeded = trainer.size
            progress.update(prune, total=max(0, seeded - (options.vocab_size - len(options.special_tokens))))
            progress.start_task(prune)
            counted = time.perf_counter()
            trainer.run()
            if trainer.finished:
                progress.update(prune, completed=progress.tasks[prune].total)
            trained = time.perf_counter()
            out = Path(args.out or DEFAULT_OUT)
            replaced = existing(out / name for name in options.file_names)
            paths = options.save(trainer, out)
    except KeyboardInterrupt:
        print(f"bpe-tui: interrupted while reading the words of {label}: nothing trained, nothing saved", file=sys.stderr)
        return 130
    _unigram_summary(Console(), trainer, label, paths, counted - started, trained - counted)
    say_replaced(replaced)
    if not trainer.finished:
        print(
            f"bpe-tui: interrupted after round {trainer.rounds_done:,}: saved its {len(trainer.vocab()):,} pieces to {out} "
            f"(pruning had not reached --vocab-size {options.vocab_size:,}; train again to finish)",
            file=sys.stderr,
        )
        return 130
    return 0


def _unigram_summary(console: Console, trainer: UnigramTrainer, label: str, paths: list[Path], read_s: float, train_s: float) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    size, tokens = trainer.corpus_size, trainer.corpus_tokens()
    table.add_row("corpus", f"{label}: {size:,} chars, {trainer.words:,} distinct words")
    table.add_row("rounds", f"{trainer.rounds_done:,} of EM and pruning, from {trainer.seeds:,} seed substrings")
    if trainer.history:
        table.add_row("likelihood", f"{trainer.history[-1][0]:,.1f} (the corpus's log-likelihood after the last round)")
    special, chars = len(trainer.special_tokens), len(trainer.characters)
    pieces = special + trainer.size
    vocabulary = f"{pieces:,} pieces ({special} special + {chars:,} characters + {trainer.size - chars:,} longer pieces)"
    if trainer.finished and pieces < trainer.vocab_size:  # a small corpus: the final step had fewer pieces than asked
        vocabulary += (
            f"\n{trainer.vocab_size - pieces:,} short of the {trainer.vocab_size:,} asked: this corpus supports no more "
            f"(EM drops a piece expected fewer than {EXPECTED_THRESHOLD} times, pruning one on no best path)"
        )
    table.add_row("vocabulary", vocabulary)
    table.add_row("compression", f"{size / max(1, tokens):.2f} chars/token ({size:,} chars → {tokens:,} tokens on the best paths)")
    table.add_row("time", f"{show_seconds(read_s + train_s)} (reading words {show_seconds(read_s)}, training {show_seconds(train_s)})")
    table.add_row("written", "\n".join(str(p) for p in paths))
    console.print(table)


def _recorded_run(trainer: SteppableTrainer) -> list[MergeRecord]:
    """Run to the end (or a stop request) as recorded steps: each merge's record for ``--trace``."""
    records = []
    token = cache(trainer.token)  # ids keep their token: name each once
    while not trainer.stop_requested and (step := trainer.step()) is not None:
        records.append(merge_record(step, token))
    return records


def _vocabulary(trainer: SteppableTrainer) -> str:
    """What the vocabulary is made of."""
    done = trainer.merges_done
    if isinstance(trainer, ClassicTrainer):
        start, size = trainer.alphabet_size, len(trainer.vocab)
        return f"{size:,} strings ({start:,} starting symbols: the characters and </w>; {size - start:,} merged)"
    if isinstance(trainer, WordPieceTrainer):
        size, special, base = len(trainer.vocab), len(trainer.special_tokens), trainer.base_size
        return f"{size:,} tokens ({special} special + {base - special:,} symbols of the alphabet + {size - base:,} merged)"
    assert isinstance(trainer, Trainer)
    return f"{len(trainer.vocab):,} tokens (256 bytes + {len(trainer.special_tokens)} special + {done:,} merges)"


def _memory(trainer: Trainer, options: TrainOptions) -> str:
    """The peak resident memory of this process and of the largest counting worker, where
    the trainer's state went by the end, and how often a memory bound had it find pairs'
    positions again."""
    parts = ", ".join(f"{name} {decimal(size)}" for name, size in trainer.memory_by_part().items())
    line = f"at the end: {parts}"
    if options.max_memory is not None:
        again = trainer.positions_found_again
        line += f"; pair positions found again {again:,} time{'' if again == 1 else 's'} (--max-memory {decimal(options.max_memory)})"
    peak = peak_memory()
    if peak is None:
        return line
    own, worker = peak
    workers = f" (largest counting worker {decimal(worker)})" if worker and options.counts is None else ""
    return f"peak {decimal(own)}{workers}; {line}"


def _summary(
    console: Console, trainer: SteppableTrainer, label: str, paths: list[Path], read_s: float, merge_s: float, options: TrainOptions
) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    done = trainer.merges_done
    note = " (stopped early: no pairs left)" if trainer.stopped_early else ""
    size, unit, tokens = trainer.corpus_size, trainer.size_unit, trainer.tokens_in_corpus
    table.add_row("corpus", f"{label}: {size:,} {unit}")
    counted = trainer.summary
    if counted is not None:
        files = len(counted.inputs)
        table.add_row("inputs", f"{files:,} file{'' if files == 1 else 's'}, {counted.bytes_read:,} bytes, digest {counted.digest[:16]}")
        if options.skip_bad_records or counted.bad_records:
            table.add_row("bad records", f"{counted.bad_records:,} skipped")
        if options.skip_bad_inputs or counted.skipped_inputs:
            table.add_row("bad inputs", "\n".join([f"{len(counted.skipped_inputs):,} skipped", *counted.skipped_inputs]))
    if counted is not None and counted.resumed:
        table.add_row(
            "resumed",
            f"{counted.resumed:,} shard{'' if counted.resumed == 1 else 's'} counted before the stop, kept in {options.save_counts}.parts",
        )
    if options.save_counts:
        table.add_row("counts", f"saved to {options.save_counts} (train again with --counts)")
    table.add_row("merges", f"{done:,} of {trainer.merges_planned:,}{note}")
    table.add_row("vocabulary", _vocabulary(trainer))
    table.add_row("compression", f"{size / max(1, tokens):.2f} {unit}/token ({size:,} {unit} → {tokens:,} tokens)")
    if isinstance(trainer, Trainer):
        table.add_row("memory", _memory(trainer, options))
    first = "loading the counts" if options.counts else "pre-tokenizing"
    table.add_row("time", f"{show_seconds(read_s + merge_s)} ({first} {show_seconds(read_s)}, merging {show_seconds(merge_s)})")
    table.add_row("written", "\n".join(str(p) for p in paths))
    console.print(table)
