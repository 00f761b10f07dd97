"""``bpe-tui encode --file A [B ...] --out IDS``: encode whole corpora into a file of token ids.

A progress bar on stderr (MB/s, tokens/s, time left) while it runs, one summary line at the
end. ``--file -`` encodes standard input (a named pipe is read the same way), with progress
in bytes read. Ctrl-C, SIGTERM, bad input or a full disk end it with nothing under IDS or
its sidecar's name.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from bpe_tui.common.progress_bars import TokenRateColumn, progress_bars
from bpe_tui.common.replaced import existing, say_replaced
from engine import SettingsError, Tokenizer
from engine.corpus.sources import find_inputs
from engine.encode.dataset import check_out, encode_dataset, sidecar_path
from engine.encode.tokenizer import model_kind
from engine.train.settings import DEFAULT_SPECIAL


def run_dataset(args: argparse.Namespace) -> int:
    if args.file is None:
        raise SettingsError("--out writes the ids of files: give them with --file")
    if args.headless or args.json:
        raise SettingsError("--out writes ids to a file: it does not go with --headless or --json")
    if args.workers is not None and args.workers < 1:
        raise SettingsError("--workers must be at least 1")
    tokenizer = Tokenizer.load(args.model, args.pattern)
    if not isinstance(tokenizer, Tokenizer):
        raise SettingsError(
            f"--out: {args.model} is a {model_kind(tokenizer)} model, and files of ids are written with byte-level BPE models: "
            "print its ids with --headless --json"
        )
    eot = None
    if args.eot:
        eot = tokenizer.special_ids.get(DEFAULT_SPECIAL)
        if eot is None:
            raise SettingsError(f"--eot: {args.model} has no {DEFAULT_SPECIAL} special token")
    if args.stdin_format is not None and "-" not in args.file:
        raise SettingsError("--stdin-format says how to read standard input: it goes with --file -")
    out = Path(args.out)
    check_out(out)
    replaced = existing((out, sidecar_path(out)))
    found = find_inputs(args.file, args.skip_bad_inputs, args.stdin_format or "text")
    sources = found.sources
    console = Console(stderr=True)
    progress = progress_bars(console, TokenRateColumn())
    total = None if any(s.stream for s in sources) else sum(s.size for s in sources)
    task = progress.add_task("encoding", total=total, unit="bytes", tokens=0)
    started = time.perf_counter()

    def report(read: int, tokens: int) -> None:
        progress.update(task, completed=read, tokens=tokens)

    try:
        with _interrupt_on_sigterm(), progress:
            summary = encode_dataset(
                tokenizer,
                sources,
                out,
                model=str(args.model),
                text_field=args.text_field,
                eot=eot,
                workers=args.workers,
                errors=args.errors,
                skip_bad_records=args.skip_bad_records,
                skipped_inputs=found.skipped,
                progress=report,
            )
    except KeyboardInterrupt:
        print(f"bpe-tui: interrupted: nothing written to {out}", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - started
    print(
        f"{summary.tokens:,} tokens ({summary.dtype}) of {summary.documents:,} document{'' if summary.documents == 1 else 's'}, "
        f"{summary.bytes_read / 1e6:,.1f} MB in {seconds:.1f} s: {summary.path}, {summary.sidecar}"
    )
    say_replaced(replaced)
    if args.skip_bad_records:
        bad = summary.bad_records
        print(f"bpe-tui: skipped {bad:,} bad record{'' if bad == 1 else 's'} (--skip-bad-records)", file=sys.stderr)
    if args.skip_bad_inputs:
        skipped = found.skipped
        print(f"bpe-tui: skipped {len(skipped):,} bad input{'' if len(skipped) == 1 else 's'} (--skip-bad-inputs)", file=sys.stderr)
        for line in skipped:
            print(f"bpe-tui: skipped {line}", file=sys.stderr)
    return 0


@contextmanager
def _interrupt_on_sigterm() -> Iterator[None]:
    """SIGTERM stops the run as Ctrl-C does: no partial file left behind."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
