"""One racer's own process: count the corpus, wait for the start, merge, report.

Both racers run ``race`` with the same corpus and settings and differ only in where their
merges come from (``Racer.merges``). Each measures its own times with its own clock, in its
own process, so neither the other racer nor the interface is in its numbers:

- counting: reading and pre-tokenizing the corpus, the same code for both;
- merging: from the pre-token counts to the last merge (for the optimized trainer, laying
  out the words and filling its heap are part of it), sending the reports left out.

Commands: ``"go"`` once, when every racer has counted (so both start merging together).
Reports: ``("counted", seconds, distinct_pre_tokens)``, ``("merged", pairs, seconds)`` at
most every ``FRAME`` seconds of merging, ``("finished", pairs, seconds)`` with the last
pairs, ``("failed", BpeError)`` for bad input and ``("crashed", traceback)`` for a bug.
"""

from __future__ import annotations

import signal
import traceback
from collections.abc import Iterator, Mapping, Sequence
from multiprocessing.connection import Connection

from bpe_tui.common.child_process import ChildProcess, Report
from bpe_tui.race.state import Merge, Race, Racer
from engine import BpeError, Trainer, reference_merges
from engine.train.settings import TrainOptions

FRAME = 0.1
"""Seconds of merging between two reports: the screen's frame rate."""
BATCH = 256
"""Merges per ``Trainer.run`` call of the optimized racer."""


def optimized_merges(word_counts: Mapping[bytes, int], vocab_size: int, special_tokens: Sequence[str]) -> Iterator[Merge]:
    """The optimized trainer's merges, run at full speed ``BATCH`` merges at a time."""
    trainer = Trainer(word_counts, vocab_size, special_tokens)
    while not trainer.finished:
        done = trainer.merges_done
        trainer.run(until=done + BATCH)
        for a, b in trainer.merge_pairs[done:]:
            yield trainer.token_bytes(a), trainer.token_bytes(b)


REFERENCE = Racer("reference", "recounts every pair per merge (engine/train/reference.py)", reference_merges)
OPTIMIZED = Racer("optimized", "updates only the pairs a merge touches (engine.Trainer)", optimized_merges)
RACERS = (REFERENCE, OPTIMIZED)


def race(commands: Connection, reports: Connection, racer: Racer, inputs: Sequence[str], options: TrainOptions) -> None:
    """The process's main: count, wait for ``go``, merge until done or the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent, which ends the race
    try:
        _run(commands, reports, racer, inputs, options)
    except (BrokenPipeError, EOFError):
        pass  # the race is over for whoever listened: nothing left to report to
    except BpeError as e:
        reports.send(("failed", e))
    except BaseException:
        reports.send(("crashed", traceback.format_exc()))


def _run(commands: Connection, reports: Connection, racer: Racer, inputs: Sequence[str], options: TrainOptions) -> None:
    clock = racer.clock
    started = clock()
    counts = options.count(inputs)
    reports.send(("counted", clock() - started, len(counts)))
    commands.recv()  # "go"
    merges = racer.merges(counts, options.vocab_size, options.special_tokens)
    batch: list[Merge] = []
    spent = 0.0
    sent = clock()
    while True:
        began = clock()
        merge = next(merges, None)
        now = clock()
        spent += now - began
        if merge is None:
            break
        batch.append(merge)
        if now - sent >= FRAME:
            reports.send(("merged", batch, spent))
            batch, sent = [], now
    reports.send(("finished", batch, spent))


# -- the parent's side ---------------------------------------------------------------------

RACER_PROCESS = "bpe-tui racer {}"
"""The name of a racer's process, with the racer's name."""


def start_racers(racers: Sequence[Racer], inputs: Sequence[str], options: TrainOptions) -> list[ChildProcess]:
    """A process for each racer, counting ``inputs`` at once."""
    return [ChildProcess(race, (racer, inputs, options), RACER_PROCESS.format(racer.name)) for racer in racers]


def follow(state: Race, children: Sequence[ChildProcess], index: int, report: Report, now: float) -> bool:
    """Apply racer ``index``'s report to ``state``; once every racer has counted, start them
    all (True then). Bad input raises its ``BpeError``, a racer's crash ``RuntimeError``."""
    kind = report[0]
    if kind == "failed":
        raise report[1]
    if kind == "crashed":
        raise RuntimeError(f"the {state.lanes[index].racer.name} racer failed:\n{report[1]}")
    state.report(index, report, now)
    if not state.ready:
        return False
    for child in children:
        child.send("go")
    state.start(now)
    return True
