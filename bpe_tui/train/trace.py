"""A run's merges as a handout: CSV (a row per merge) or JSON, written by ``t`` on the training
screen and by ``bpe-tui train --headless --trace FILE``.

Each merge has its pair, the new token and the characters of the corpus it holds part of,
its count, the pairs it beat on a tie, and every pair count it changed: the trainer's own
events (``engine.train.trace``). Tokens read as on screen (a pair as one text, so ``。₁₋₂|。₃``);
the ``*_hex`` fields give the exact bytes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bpe_tui.common.tokens import chars_label, show_parts, show_token
from engine import SettingsError
from engine.corpus.characters import CharacterCounts
from engine.train.events import Token
from engine.train.settings import TrainOptions
from engine.train.trace import MergeRecord

SUFFIXES = (".csv", ".json")
COLUMNS = ["merge", "id", "left", "right", "token", "characters", "count", "ties", "changed", "changes", "left_hex", "right_hex"]


@dataclass(frozen=True)
class TraceOf:
    """What the trace is of: the corpus, the vocabulary size asked for and the tie rule."""

    corpus: str
    vocab_size: int
    tie_break: str


def trace_of(corpus: str, options: TrainOptions) -> TraceOf:
    """What a trace of training ``corpus`` with ``options`` is of; ties as the lectures break
    them (byte-level: the greater pair of byte strings; classic: the pair seen first;
    WordPiece picks by score, and breaks its ties by count, then bytes)."""
    if options.algorithm == "wordpiece":
        ties = "the higher score count(ab)/(count(a)·count(b)), then the larger count(ab), then the greater pair"
    else:
        ties = "the pair seen first" if options.classic else "the lexicographically greater pair"
    return TraceOf(corpus, options.vocab_size, ties)


def check_trace_name(name: str, option: str = "--trace") -> None:
    """Refuse, as one line, a file name whose format is not one a trace is written in."""
    if Path(name).suffix.lower() not in SUFFIXES:
        raise SettingsError(f"{option} {name}: a trace is written as .csv or .json")


@lru_cache(maxsize=1 << 18)
def _pair(left: Token, right: Token) -> tuple[str, str]:
    """A pair read as one text; the same pairs come back merge after merge, so each is read once."""
    shown_left, shown_right = show_parts([left, right])
    return shown_left, shown_right


def _hex(token: Token) -> str | None:
    return token.hex() if isinstance(token, bytes) else None


def _characters(token: Token, chars: CharacterCounts | None) -> dict[str, list[str]] | None:
    found = chars.around(token) if chars is not None and isinstance(token, bytes) else None
    return None if found is None else {"ends": list(found.ends), "begins": list(found.begins)}


def trace_csv(records: Sequence[MergeRecord], chars: CharacterCounts | None = None) -> str:
    """A row per merge; ties and changes as ``a|b`` lists joined by ``; ``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in records:
        left, right = _pair(r.left, r.right)
        ties = "; ".join("|".join(_pair(a, b)) for a, b in r.ties)
        changes = "; ".join(f"{c.side} {'|'.join(_pair(c.left, c.right))} {c.before}→{c.after}" for c in r.changes)
        found = chars.around(r.token) if chars is not None and isinstance(r.token, bytes) else None
        row = [r.merge, r.new_id, left, right, show_token(r.token), chars_label(found), r.count, ties, len(r.changes), changes]
        writer.writerow([*row, _hex(r.left) or "", _hex(r.right) or ""])
    return out.getvalue()


def trace_json(records: Sequence[MergeRecord], about: TraceOf, chars: CharacterCounts | None = None) -> str:
    """The run, then each merge with its ties and changes as lists."""
    merges = []
    for r in records:
        left, right = _pair(r.left, r.right)
        merges.append(
            {
                "merge": r.merge,
                "id": r.new_id,
                "left": left,
                "right": right,
                "token": show_token(r.token),
                "left_hex": _hex(r.left),
                "right_hex": _hex(r.right),
                "characters": _characters(r.token, chars),
                "count": r.count,
                "ties": [list(_pair(a, b)) for a, b in r.ties],
                "changes": [
                    {"pair": list(_pair(c.left, c.right)), "before": c.before, "after": c.after, "side": c.side} for c in r.changes
                ],
            }
        )
    run = {"corpus": about.corpus, "vocab_size": about.vocab_size, "tie_break": about.tie_break, "merges_done": len(records)}
    head = json.dumps(run, ensure_ascii=False, indent=1)[:-2]  # without its closing brace
    lines = ",\n".join(json.dumps(merge, ensure_ascii=False) for merge in merges)  # a merge a line: long runs stay small
    return f'{head},\n "merges": [\n{lines}\n ]\n}}\n'


def trace_text(name: str, records: Sequence[MergeRecord], about: TraceOf, chars: CharacterCounts | None = None) -> str:
    """The trace in the format ``name``'s suffix asks for (checked by ``check_trace_name``)."""
    if Path(name).suffix.lower() == ".json":
        return trace_json(records, about, chars)
    return trace_csv(records, chars)
