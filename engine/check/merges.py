"""A student's merges and vocabulary against the exact trainer's.

Merges are numbered from 1, as the training screen numbers them. The first that differs is
explained by the rule (``engine.check.why``), and the merges after it counted where they
still agree, number for number: a tie broken the other way often swaps two merges and
leaves the rest as they were. When every merge agrees, the vocabularies are compared id by
id: the rule's layout is the 256 bytes (ids 0-255), the special tokens in order, then the
token of each merge in order (GPT-2's and tiktoken's too). A student's may hold the same
tokens under other ids (CS336's tests compare the vocabulary as sets); that is reported too,
as a difference of layout.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.check.why import BytesPair, Choice, explain_choice
from engine.train.trainer import Trainer


@dataclass(frozen=True, slots=True)
class Agreement:
    """Every merge and every id of the vocabulary agree."""

    merges: int


@dataclass(frozen=True, slots=True)
class MergeDifference:
    """The first merge that differs, and how many after it still agree."""

    index: int
    """Numbered from 1."""
    yours: BytesPair | None
    """None: the student's merges stop before it."""
    rule: BytesPair | None
    """None: the rule has no merge ``index`` (the vocabulary size is reached, or no pair is left)."""
    your_merges: int
    rule_merges: int
    agree_after: int
    """Merges after ``index`` that agree, number for number."""
    compared_after: int
    """Merges after ``index`` that both made."""
    choice: Choice | None
    """Why the rule chose its pair (when both made merge ``index``)."""
    rule_stopped_early: bool = False
    """The rule ran out of pairs before the vocabulary size."""


@dataclass(frozen=True, slots=True)
class VocabDifference:
    """Every merge agrees, yet the vocabularies differ: the first id that does."""

    token_id: int
    yours: bytes | None
    """None: the student's vocabulary has no such id."""
    rule: bytes | None
    merges: int
    your_size: int
    rule_size: int
    same_tokens: bool
    """Both hold the same tokens, under other ids (another layout)."""


CheckResult = Agreement | MergeDifference | VocabDifference


def first_difference(rule: Sequence[BytesPair], yours: Sequence[BytesPair]) -> int | None:
    """The number (from 1) of the first merge that differs, or that one list has and the
    other lacks; None when they are equal."""
    for i, (r, y) in enumerate(zip(rule, yours, strict=False)):
        if r != y:
            return i + 1
    return None if len(rule) == len(yours) else min(len(rule), len(yours)) + 1


def first_vocab_difference(rule: Mapping[int, bytes], yours: Mapping[int, bytes]) -> int | None:
    """The smallest id whose token differs, or that one vocabulary has and the other lacks."""
    return next((i for i in sorted(rule.keys() | yours.keys()) if rule.get(i) != yours.get(i)), None)


def check_training(trainer: Trainer, vocab: Mapping[int, bytes], merges: Sequence[BytesPair]) -> CheckResult:
    """Hold ``(vocab, merges)`` against ``trainer``, which has run to its end. At a merge that
    differs the trainer is taken back to just before it, to say why the rule chose its pair
    (it is left just after it)."""
    rule = trainer.merges
    k = first_difference(rule, merges)
    if k is not None:
        after = list(zip(rule[k:], merges[k:], strict=False))
        stopped = trainer.stopped_early
        choice = None
        if k <= len(rule) and k <= len(merges):
            trainer.goto(k - 1)
            choice = explain_choice(trainer, merges[k - 1], trainer.special_tokens)
        return MergeDifference(
            index=k,
            yours=merges[k - 1] if k <= len(merges) else None,
            rule=rule[k - 1] if k <= len(rule) else None,
            your_merges=len(merges),
            rule_merges=len(rule),
            agree_after=sum(1 for r, y in after if r == y),
            compared_after=len(after),
            choice=choice,
            rule_stopped_early=stopped,
        )
    rule_vocab = trainer.vocab
    token_id = first_vocab_difference(rule_vocab, vocab)
    if token_id is None:
        return Agreement(len(rule))
    return VocabDifference(
        token_id=token_id,
        yours=vocab.get(token_id),
        rule=rule_vocab.get(token_id),
        merges=len(rule),
        your_size=len(vocab),
        rule_size=len(rule_vocab),
        same_tokens=Counter(vocab.values()) == Counter(rule_vocab.values()),
    )
