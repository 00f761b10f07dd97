"""Why the rule merges its pair and not the student's, where their merges first differ.

The exact trainer stands just before that merge: ``pair_counter`` gives the count of every
pair in the corpus as merged so far (the student's pair among them, or not), and the
trainer's own ``MergeStep`` for the merge gives the rule's pair, its count and the pairs
tied with it. The rule (lecture 001): the most frequent pair merges; among pairs of the same
count, the lexicographically greater pair of byte strings, as Python's ``max`` compares
``(count, (left, right))``: the left tokens first, the right ones only when the left are
equal; two byte strings byte by byte, a prefix before what goes on past it.

Where the student's choice is another rule's, ``hint`` names it: on a tie the smaller pair,
the greater joined bytes ``left + right``, token ids instead of bytes; on a count, a pair
inside a special token, a pair across two pre-tokens, a token no merge made, a pair of the
same token twice (it overlaps itself in a run) or one beside the newest token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.train.trainer import Trainer

BytesPair = tuple[bytes, bytes]

TIE_HINTS = ("smaller", "joined", "greater ids", "smaller ids")
"""The other tie-break rules a student's choice among tied pairs can be recognised as."""
COUNT_HINTS = ("special", "missing", "across", "self", "newest")
"""The likely causes of a count that differs: a pair inside a special token, a token no merge
made, a pair never side by side inside a pre-token, a pair of one token twice, a pair beside
the newest token."""


@dataclass(frozen=True, slots=True)
class TieBreak:
    """Where two tied pairs part: the tokens that decide, and the byte they differ at."""

    side: str
    """``left`` (the left tokens differ) or ``right`` (the left ones are equal)."""
    at: int
    """1-based byte where the deciding tokens differ; one past the shorter when it is a prefix
    of the longer (the prefix is smaller)."""
    greater: bytes
    """The rule's token on that side."""
    smaller: bytes
    """The student's."""

    @property
    def prefix(self) -> bool:
        """The smaller token is a prefix of the greater."""
        return self.at > len(self.smaller)


@dataclass(frozen=True, slots=True)
class Choice:
    """The rule's pair against the student's at merge ``merge``, with what decided."""

    merge: int
    """The merge that differs, numbered from 1."""
    rule: BytesPair
    rule_count: int
    yours: BytesPair
    your_count: int
    """How often the student's pair stands in the corpus as merged so far (0: nowhere)."""
    your_rank: int | None
    """Its place in the rule's order (1 is the rule's pair); None when it is no pair now."""
    tied: int
    """Pairs at the rule's count, the rule's among them."""
    ties: list[BytesPair] = field(default_factory=list)
    """The first pairs the rule's pair beat at its count, from its ``MergeStep``."""
    tie_break: TieBreak | None = None
    """On a tie: where the rule's pair and the student's part."""
    hint: str | None = None
    """A likely cause (one of ``TIE_HINTS`` or ``COUNT_HINTS``), None when none is seen."""
    missing: bytes | None = None
    """With hint ``missing``: the student's token that no merge before this one made."""
    special: str | None = None
    """With hint ``special``: the special token the student's pair lies inside."""
    newest: bytes | None = None
    """The token merge ``merge - 1`` made (None before the first merge)."""

    @property
    def tie(self) -> bool:
        """The student's pair has the rule's count: the tie-break decided."""
        return self.your_count == self.rule_count


def tie_break(rule: BytesPair, yours: BytesPair) -> TieBreak:
    """Where ``rule`` and ``yours`` part, ``rule`` being the greater pair."""
    side = 0 if rule[0] != yours[0] else 1
    greater, smaller = rule[side], yours[side]
    at = next((i for i, (g, s) in enumerate(zip(greater, smaller, strict=False)) if g != s), min(len(greater), len(smaller)))
    return TieBreak("left" if side == 0 else "right", at + 1, greater, smaller)


def explain_choice(trainer: Trainer, yours: BytesPair, special_tokens: Sequence[str] = ()) -> Choice:
    """Why the trainer's next merge is its pair and not ``yours``. ``trainer`` stands just
    before that merge, and makes it here (its ``MergeStep`` is read)."""
    merge = trainer.merges_done + 1
    token = trainer.token_bytes
    counts: dict[BytesPair, int] = {}
    ids: dict[BytesPair, tuple[int, int]] = {}
    for (a, b), count in trainer.pair_counter.items():
        key = (token(a), token(b))
        if key not in counts or count > counts[key]:  # two ids of the same bytes: the rule sees the larger
            counts[key], ids[key] = count, (a, b)
    known = set(trainer.vocab.values())
    newest = token(trainer.merge_ids[-1]) if trainer.merges_done else None
    step = trainer.step()
    if step is None:
        raise ValueError(f"the trainer has no merge {merge} to explain")
    rule = (token(step.pair[0]), token(step.pair[1]))
    rule_count = step.count
    your_count = counts.get(yours, 0)
    your_rank = 1 + sum(1 for key, count in counts.items() if (count, key) > (your_count, yours)) if yours in counts else None
    tied = [key for key, count in counts.items() if count == rule_count]
    tie = tie_break(rule, yours) if yours in counts and your_count == rule_count else None
    hint, missing, special = _tie_hint(yours, tied, ids) if tie else None, None, None
    joined = yours[0] + yours[1]
    if tie is None:
        special = next((s for s in special_tokens if yours[0] and yours[1] and joined in s.encode("utf-8")), None)
        missing = next((t for t in yours if t not in known), None)
        if special is not None:
            hint = "special"
        elif missing is not None:
            hint = "missing"
        elif your_count == 0:
            hint = "across"
        elif yours[0] == yours[1] or rule[0] == rule[1]:
            hint = "self"
        elif newest is not None and newest in (*yours, *rule):
            hint = "newest"
    return Choice(
        merge=merge,
        rule=rule,
        rule_count=rule_count,
        yours=yours,
        your_count=your_count,
        your_rank=your_rank,
        tied=len(tied),
        ties=[(token(a), token(b)) for a, b in step.ties],
        tie_break=tie,
        hint=hint,
        missing=missing if hint == "missing" else None,
        special=special if hint == "special" else None,
        newest=newest,
    )


def _tie_hint(yours: BytesPair, tied: list[BytesPair], ids: dict[BytesPair, tuple[int, int]]) -> str | None:
    """Which other tie-break rule picks ``yours`` among the ``tied`` pairs, if one does."""
    if yours == min(tied):
        return "smaller"
    if yours == max(tied, key=lambda p: (p[0] + p[1], p)):
        return "joined"
    if yours == max(tied, key=ids.__getitem__):
        return "greater ids"
    if yours == min(tied, key=ids.__getitem__):
        return "smaller ids"
    return None
