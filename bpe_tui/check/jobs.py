"""What a check does, step by step, for the headless command and the check screen alike.

A trainer check (``TrainingCheck``) runs the student's function on the corpus, then the
exact trainer on the same corpus and settings (timed: counting and merging, as theirs
reads the file too), holds one against the other (``engine.check.merges``) and times the
recount-everything trainer (``engine.train.reference``), stopped after ``RECOUNT_LIMIT``
seconds. An encoder check (``EncodingCheck``) builds the student's class from the model and
encodes the text given and the hard texts (``engine.check.encoding``) in its process, then
compares each with the engine's ids and its own decoding. ``run_check`` returns the
``Verdict`` (``bpe_tui.check.verdict``), telling ``phase(what, seconds)`` what it is doing
on the way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bpe_tui.check.student import Outcome, Returned, Target, run_student
from bpe_tui.check.verdict import Times, Verdict, encoding_verdict, failure_verdict, training_verdict
from engine import Tokenizer, reference_merges
from engine.check.encoding import GIVEN, HardText, compare_decoding, compare_encoding, hard_texts, overlapping_tokenizer, with_overlapping
from engine.check.merges import check_training
from engine.train.settings import TrainOptions
from engine.train.trainer import Trainer

RECOUNT_LIMIT = 60.0
"""Seconds the recount-everything trainer is timed for at most: it recounts every pair for
every merge, and on a large corpus would take hours."""
DEFAULT_TIMEOUT = 600.0

Phase = Callable[[str, "float | None"], None]
"""What a check is doing now, and for how many seconds so far (None: not timed on screen)."""


@dataclass(frozen=True)
class TrainingCheck:
    """A student's trainer, ``FUNCTION(input_path, vocab_size, special_tokens)``, on one corpus."""

    target: Target
    corpus: str
    label: str
    """The corpus as screens name it."""
    options: TrainOptions
    timeout: float = DEFAULT_TIMEOUT

    @property
    def title(self) -> str:
        return f"{self.target} on {self.label}, vocab size {self.options.vocab_size:,}"


@dataclass(frozen=True)
class EncodingCheck:
    """A student's encoder, ``CLASS(vocab, merges, special_tokens)``, on a model's files."""

    target: Target
    model: str
    tokenizer: Tokenizer
    text: str | None = None
    """The text given (``--text``, ``--file``), checked first."""
    timeout: float = DEFAULT_TIMEOUT
    texts: list[HardText] = field(default_factory=list)

    def __post_init__(self) -> None:
        given = [] if self.text is None else [HardText(GIVEN, self.text)]
        self.texts[:] = given + hard_texts(self.tokenizer.special_tokens)

    @property
    def title(self) -> str:
        return f"{self.target} with {Path(self.model).name}'s vocabulary and merges, on {len(self.texts)} texts"


Check = TrainingCheck | EncodingCheck


def run_check(
    check: Check, phase: Phase = lambda what, seconds: None, stopped: Callable[[], bool] = lambda: False, headless: bool = True
) -> Verdict:
    """Run ``check`` to its verdict. ``Stopped`` (from ``bpe_tui.check.student``) when
    ``stopped()`` while the student's code runs."""
    running = f"running your {check.target.name}"
    phase(running, 0.0)
    outcome = run_student(
        check.target,
        "train" if isinstance(check, TrainingCheck) else "encode",
        _request(check),
        check.timeout,
        lambda seconds: phase(running, seconds),
        stopped,
        headless,
    )
    if not isinstance(outcome, Returned):
        return failure_verdict(check.target, outcome, check.timeout)
    if isinstance(check, TrainingCheck):
        return _training(check, outcome, phase)
    return _encoding(check, outcome, phase)


def _request(check: Check) -> dict[str, object]:
    if isinstance(check, TrainingCheck):
        return {"args": (str(Path(check.corpus).resolve()), check.options.vocab_size, list(check.options.special_tokens))}
    tokenizer = check.tokenizer
    model = (tokenizer.vocab, tokenizer.merges, list(tokenizer.special_tokens))
    overlapping = with_overlapping(tokenizer.vocab, tokenizer.special_tokens) if tokenizer.special_tokens else None
    return {
        "model": model,
        "overlapping": None if overlapping is None else (overlapping[0], tokenizer.merges, overlapping[1]),
        "texts": [(text.name, text.text, text.overlapping) for text in check.texts],
    }


def _training(check: TrainingCheck, outcome: Returned, phase: Phase) -> Verdict:
    vocab, merges = outcome.value
    phase("training with the exact trainer", None)
    started = time.perf_counter()
    trainer = check.options.load([check.corpus])
    assert isinstance(trainer, Trainer)  # the command checks byte-level BPE only
    trainer.run()
    optimized = time.perf_counter() - started
    recount = _time_recount(check, phase)
    result = check_training(trainer, vocab, merges)
    times = Times(outcome.seconds, optimized, *recount)
    return training_verdict(check.target, result, check.options, times, outcome.output)


def _time_recount(check: TrainingCheck, phase: Phase) -> tuple[float, int, bool]:
    """Seconds the recount-everything trainer took, its merges, and whether it finished
    (stopped after ``RECOUNT_LIMIT`` seconds)."""
    what = "timing the recount-everything trainer"
    phase(what, 0.0)
    started = time.perf_counter()
    counts = check.options.count([check.corpus])
    made, shown = 0, 0.0
    for _ in reference_merges(counts, check.options.vocab_size, check.options.special_tokens):
        made += 1
        elapsed = time.perf_counter() - started
        if elapsed > RECOUNT_LIMIT:
            return elapsed, made, False
        if elapsed - shown >= 0.1:
            phase(what, elapsed)
            shown = elapsed
    return time.perf_counter() - started, made, True


def _encoding(check: EncodingCheck, outcome: Returned, phase: Phase) -> Verdict:
    phase("encoding with the engine", None)
    base = check.tokenizer
    overlapping = overlapping_tokenizer(base) if base.special_tokens else None
    started = time.perf_counter()
    for text in check.texts:
        (overlapping if text.overlapping and overlapping is not None else base).encode(text.text)
    engine_seconds = time.perf_counter() - started
    results: list[tuple[list[int], str]] = outcome.value
    for text, (ids, decoded) in zip(check.texts, results, strict=True):
        tokenizer = overlapping if text.overlapping and overlapping is not None else base
        difference = compare_encoding(tokenizer, text, ids)
        if difference is not None:
            return encoding_verdict(len(check.texts), check.text is not None, difference, tokenizer, outcome, engine_seconds)
        round_trip = compare_decoding(text, decoded)
        if round_trip is not None:
            return encoding_verdict(len(check.texts), check.text is not None, round_trip, tokenizer, outcome, engine_seconds)
    return encoding_verdict(len(check.texts), check.text is not None, None, base, outcome, engine_seconds)


__all__ = ["Check", "EncodingCheck", "Outcome", "TrainingCheck", "run_check"]
