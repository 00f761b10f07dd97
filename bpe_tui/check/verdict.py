"""A check's verdict in words: the lines ``bpe-tui check`` prints and the check screen shows.

Exit status 0 when everything agrees, 1 when a merge, an id of the vocabulary, an encoded id
or a round trip differs, 2 when there was nothing to compare: the student's code raised (its
own frames, then the exception), timed out, died, or returned the wrong shape (one line).
Pairs are written as the student's code has them, ``(b' t', b'he')``; tokens on the screen
as everywhere in bpe-tui (``␣t|he``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from bpe_tui.check.student import Died, Frame, Outcome, Raised, Refused, Returned, Target, TimedOut
from bpe_tui.common.durations import show_seconds
from bpe_tui.common.tokens import show_token
from engine import Tokenizer
from engine.check.encoding import EncodeDifference, RoundTrip
from engine.check.merges import Agreement, CheckResult, MergeDifference, VocabDifference
from engine.check.why import BytesPair, Choice
from engine.train.settings import TrainOptions

AGREE, DIFFER, FAILED = 0, 1, 2
"""The exit statuses."""
LABEL = 10
"""Width of the labels of the detail lines."""

TIE_HINTS = {
    "smaller": "you broke the tie toward the smaller pair (min, or the first of an ascending sort)",
    "joined": "you compared the joined bytes left + right, not the pair (left, right)",
    "greater ids": "you compared token ids, not the tokens' bytes",
    "smaller ids": "you took the pair of the smaller ids (made first), not of the greater bytes",
}


@dataclass(frozen=True)
class Times:
    """Seconds each took: the student's call, the optimized trainer (counting and merging),
    the recount-everything trainer (stopped after a while: its merges then)."""

    yours: float
    optimized: float
    recount: float
    recount_merges: int
    recount_finished: bool


@dataclass(frozen=True)
class EncodeOpening:
    """Where the encode view opens: the text, at the pre-token where the ids first differ."""

    tokenizer: Tokenizer
    text: str
    pretoken: int
    note: str


@dataclass
class Verdict:
    code: int
    lines: list[Line]
    """The headline first; printed on stderr after ``bpe-tui: `` when ``code`` is 2."""
    merge: MergeDifference | None = None
    """A merge that differs: the training screen opens just before it."""
    encode: EncodeOpening | None = None
    """Ids that differ: the encode view opens there."""
    output: str = ""
    """The end of what the student's code printed (when it was not passed through)."""


def pair(p: BytesPair) -> str:
    return f"({p[0]!r}, {p[1]!r})"


@dataclass(frozen=True)
class Detail:
    """A line of the verdict under its label (``counts``, ``why``): one line when printed;
    on the screen its text wraps indented past the label."""

    label: str
    text: Text

    def line(self) -> Text:
        line = Text("  " + self.label.ljust(LABEL), "bold")
        line.append_text(self.text)
        return line


Line = Text | Detail


def _detail(label: str, text: str | Text) -> Detail:
    return Detail(label, Text(text) if isinstance(text, str) else text)


def plain_lines(lines: list[Line]) -> list[Text]:
    """Each line as printed: a detail after its label, on one line."""
    return [line.line() if isinstance(line, Detail) else line for line in lines]


def shown(lines: list[Line]) -> RenderableType:
    """The lines as the screen shows them: the details' texts wrapped past their labels."""
    parts: list[RenderableType] = []
    grid: Table | None = None
    for line in lines:
        if isinstance(line, Detail):
            if grid is None:
                grid = Table.grid(padding=(0, 1))
                grid.add_column(no_wrap=True, style="bold", width=LABEL + 1)
                grid.add_column(ratio=1)
                parts.append(grid)
            grid.add_row(" " + line.label, line.text)
        else:
            grid = None
            parts.append(line)
    return Group(*parts)


# -- the trainer ------------------------------------------------------------------------------


def training_verdict(target: Target, result: CheckResult, options: TrainOptions, times: Times, output: str = "") -> Verdict:
    time_line = _detail("time", _times(times, options))
    if isinstance(result, Agreement):
        head = Text(f"{result.merges:,} of {result.merges:,} merges match; the vocabulary matches", "bold green")
        return Verdict(AGREE, [head, time_line], output=output)
    if isinstance(result, VocabDifference):
        return Verdict(DIFFER, [*_vocab_lines(result, options), time_line], output=output)
    return Verdict(DIFFER, [*_merge_lines(result, options), time_line], merge=result, output=output)


def _times(times: Times, options: TrainOptions) -> str:
    recount = f"the recount-everything trainer {show_seconds(times.recount)}"
    if not times.recount_finished:
        recount += f" (stopped there, at merge {times.recount_merges:,} of {options.merges_planned or 0:,})"
    return f"yours {show_seconds(times.yours)} · the optimized trainer {show_seconds(times.optimized)} · {recount}"


def _vocab_lines(result: VocabDifference, options: TrainOptions) -> list[Line]:
    def token(value: bytes | None) -> str:
        return "missing" if value is None else repr(value)

    head = Text(
        f"{result.merges:,} of {result.merges:,} merges match, but the vocabulary differs: "
        f"id {result.token_id:,} is {token(result.yours)} in yours, {token(result.rule)} in the rule's",
        "bold red",
    )
    specials = len(options.special_tokens)
    layout = (
        f"the rule's layout is the 256 bytes (ids 0-255), the {specials} special token{'' if specials == 1 else 's'} "
        f"(from 256), then each merge's token in order"
    )
    if result.same_tokens:
        why = f"the same {result.rule_size:,} tokens under other ids: {layout}; CS336's tests compare the vocabulary as sets"
    else:
        why = f"yours holds {result.your_size:,} ids, the rule's {result.rule_size:,}: {layout}"
    return [head, _detail("layout", why)]


def _merge_lines(result: MergeDifference, options: TrainOptions) -> list[Line]:
    k = result.index
    if result.yours is None:
        rule = pair(result.rule or (b"", b""))
        head = f"merge {k:,} differs: yours has none (your merges stop at {result.your_merges:,}), the rule's {rule}"
        return [Text(head, "bold red")]
    if result.rule is None:
        if result.rule_stopped_early:
            why = f"no pair is left to merge after merge {result.rule_merges:,}: every pre-token is one token"
        else:
            specials = len(options.special_tokens)
            why = (
                f"vocab size {options.vocab_size:,} leaves room for {result.rule_merges:,} merges "
                f"(after the 256 bytes and {specials} special token{'' if specials == 1 else 's'})"
            )
        head = f"merge {k:,} differs: yours {pair(result.yours)}, the rule has none ({why})"
        return [Text(head, "bold red")]
    lines: list[Line] = [Text(f"merge {k:,} differs: yours {pair(result.yours)}, the rule's {pair(result.rule)}", "bold red")]
    if result.choice is not None:
        lines += _choice_lines(result.choice)
    after = result.compared_after
    lines.append(_detail("after it", f"{result.agree_after:,} of the {after:,} merges after merge {k:,} still agree, number for number"))
    return lines


def _choice_lines(choice: Choice) -> list[Line]:
    k = choice.merge
    where = f"in the corpus after merge {k - 1:,}" if k > 1 else "in the corpus before any merge"
    rank = "" if choice.your_rank is None or choice.tie else f" (yours is pair {choice.your_rank:,} in the rule's order)"
    lines: list[Line] = [
        _detail("counts", f"{pair(choice.rule)} {choice.rule_count:,} · {pair(choice.yours)} {choice.your_count:,}, {where}{rank}")
    ]
    lines.append(_detail("why", why(choice)))
    likely = likely_cause(choice)
    if likely:
        lines.append(_detail("likely", likely))
    return lines


def why(choice: Choice) -> str:
    """Why the rule chose its pair, in a sentence."""
    if not choice.tie or choice.tie_break is None:
        if choice.your_count == 0:
            count = choice.rule_count
            return f"yours stands nowhere in the corpus now; the rule's pair occurs {count:,} times: the most frequent pair merges first"
        return (
            f"the rule's pair occurs more often, {choice.rule_count:,} times against {choice.your_count:,}: "
            "the most frequent pair merges first"
        )
    tie = choice.tie_break
    pairs = f"{choice.tied:,} pairs" if choice.tied > 2 else "2 pairs"
    if tie.prefix:
        how = f"{tie.smaller!r} is a prefix of {tie.greater!r}, so the smaller"
    else:
        how = f"at byte {tie.at}, {_byte(tie.greater[tie.at - 1])} > {_byte(tie.smaller[tie.at - 1])}"
    return (
        f"a tie at {choice.rule_count:,} ({pairs}): ties go to the lexicographically greater pair of byte strings "
        f"(lecture 001: max over (count, pair)); the {tie.side} tokens decide: {tie.greater!r} > {tie.smaller!r} ({how})"
    )


def _byte(value: int) -> str:
    """``0x65 'e'``: a byte, and its character when it is printable ASCII."""
    return f"{value:#04x} {chr(value)!r}" if 0x20 <= value < 0x7F else f"{value:#04x}"


def likely_cause(choice: Choice) -> str:
    """What the student's code most likely does differently, when a rule is seen; else empty."""
    hint = choice.hint
    if hint in TIE_HINTS:
        return TIE_HINTS[hint]
    yours = pair(choice.yours)
    if hint == "special":
        return (
            f"{yours} lies inside the special token {choice.special!r}: special tokens are cut out of the text "
            "before pre-tokenizing, and nothing in them is counted"
        )
    if hint == "missing":
        return f"{choice.missing!r} is no token after merge {choice.merge - 1:,}: no merge before it made it"
    if hint == "across":
        return f"{yours} never stands side by side inside a pre-token: pairs are counted inside pre-tokens, never across two"
    if hint == "self":
        return (
            "a pair of one token twice overlaps itself in a run: a a a holds (a, a) twice but merges it once, left to "
            "right; count the pairs as the merged words have them"
        )
    if hint == "newest":
        return (
            f"merge {choice.merge - 1:,} made {choice.newest!r}: the counts of the pairs beside it changed with it "
            "(prev_token and next_token): recount them, or update them as the lecture's merge does"
        )
    return ""


# -- the encoder ------------------------------------------------------------------------------


def encoding_verdict(
    texts: int,
    given: bool,
    difference: EncodeDifference | RoundTrip | None,
    tokenizer: Tokenizer,
    outcome: Returned,
    engine_seconds: float,
) -> Verdict:
    time_line = _detail("time", f"yours {show_seconds(outcome.seconds)} encoding · the engine {show_seconds(engine_seconds)}")
    if difference is None:
        said = f"the text given and {texts - 1} hard texts" if given else f"{texts} hard texts"
        head = Text(f"the same ids on {texts} texts ({said}), and decode gives each back", "bold green")
        return Verdict(AGREE, [head, time_line], output=outcome.output)
    if isinstance(difference, RoundTrip):
        text = difference.text
        at = difference.at
        head = Text(f"{text.name}: decode(encode(text)) is not the text: it parts at character {at:,}", "bold red")
        lines: list[Line] = [
            head,
            _detail("text", repr(text.text[max(0, at - 20) : at + 20])),
            _detail("decoded", repr(difference.decoded[max(0, at - 20) : at + 20])),
            time_line,
        ]
        return Verdict(DIFFER, lines, output=outcome.output)
    lines = _encode_lines(difference)
    opening = None
    if difference.pretoken is not None:
        note = f"check: your ids differ at token {difference.position:,}"
        opening = EncodeOpening(tokenizer, difference.text.text, difference.pretoken, note)
    return Verdict(DIFFER, [*lines, time_line], encode=opening, output=outcome.output)


def _encode_lines(d: EncodeDifference) -> list[Line]:
    def ids(values: list[int]) -> str:
        return str(values[d.position]) if d.position < len(values) else "none (the ids end)"

    head = Text(f"{d.text.name}: token {d.position:,} differs: yours {ids(d.your_ids)}, the rule's {ids(d.rule_ids)}", "bold red")
    lines: list[Line] = [head]
    if d.trace is not None and d.pretoken is not None:
        mine = _tokens([t for t in d.your_tokens if t is not None]) + (" and an id the vocabulary lacks" if None in d.your_tokens else "")
        lines.append(
            _detail(
                "pre-token",
                f"“{show_token(d.trace.text.encode('utf-8'))}”, the {_ordinal(d.pretoken + 1)}: "
                f"the rule's {_tokens(d.rule_tokens)} · yours {mine}",
            )
        )
        if d.trace.special:
            lines.append(_detail("why", "a special token: cut out of the text whole before pre-tokenizing, and never merged"))
        elif d.merges:
            rounds = ", ".join(f"{a!r} + {b!r} (rank {rank:,})" for a, b, rank in d.merges)
            lines.append(_detail("merges", f"the rule's there, in order, the lowest rank first each round: {rounds}"))
            made = [f"{t!r} (rank {rank:,})" for t, rank in d.made_by.items() if t not in d.rule_tokens]
            if made:
                lines.append(_detail("yours", "holds what the rule does not make there: " + ", ".join(made)))
        else:
            lines.append(_detail("merges", "none: no pair of its bytes is in the merges"))
    else:
        lines.append(_detail("after", f"yours goes on past the rule's {len(d.rule_ids):,} ids: {d.your_ids[d.position :][:8]}"))
    lines.append(_detail("text", repr(d.text.text if len(d.text.text) <= 80 else d.text.text[:79] + "…")))
    return lines


def _tokens(tokens: list[bytes], limit: int = 16) -> str:
    """Tokens as the student's code has them, ``[b' t', b'he']``, the first ``limit``."""
    shown = ", ".join(repr(t) for t in tokens[:limit])
    return f"[{shown}{', …' if len(tokens) > limit else ''}]"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"


# -- nothing to compare -------------------------------------------------------------------------


def failure_verdict(target: Target, outcome: Outcome, timeout: float) -> Verdict:
    """Exit status 2: the code raised, timed out, died or returned the wrong shape."""
    if isinstance(outcome, Raised):
        return Verdict(FAILED, raised_lines(target, outcome), output=outcome.output)
    if isinstance(outcome, TimedOut):
        line = f"{target} did not return within {show_seconds(timeout)} (--timeout {timeout:g}): stopped"
    elif isinstance(outcome, Died):
        line = f"{target}: its process died ({outcome.how})"
    elif isinstance(outcome, Refused):
        line = outcome.message if outcome.message.startswith(target.path.name) else f"{target} {outcome.message}"
    else:
        raise AssertionError(f"not a failure: {outcome!r}")
    return Verdict(FAILED, [Text(line)], output=outcome.output)


def raised_lines(target: Target, outcome: Raised) -> list[Line]:
    """The student's frames, most recent call last, then the exception: Python's own form,
    without the frames of bpe-tui, the runner, the standard library or installed packages."""
    name = outcome.exception.splitlines()[-1].partition(":")[0] if outcome.exception else "an exception"
    lines: list[Line] = [Text(f"{target} raised {name} in {outcome.during}; your code's frames, most recent call last:")]
    lines += _frames(outcome.frames)
    if outcome.worker_frames:
        lines.append(Text("in a worker process:", "bold"))
        lines += _frames(outcome.worker_frames)
    if not outcome.frames and not outcome.worker_frames and "\n" not in outcome.exception:
        lines.append(Text("  (no frame of your code: it raised as it was called)", "dim"))
    lines += [
        Text(line, "bold red" if i == len(outcome.exception.splitlines()) - 1 else "")
        for i, line in enumerate(outcome.exception.splitlines())
    ]
    return lines


def _frames(frames: list[Frame]) -> list[Line]:
    out: list[Line] = []
    for file, line, function, code in frames:
        out.append(Text(f'  File "{_near(file)}", line {line}, in {function}'))
        if code:
            out.append(Text(f"    {code}", "bold"))
    return out


def _near(file: str) -> str:
    """``file`` relative to the working directory when it lies under it."""
    try:
        return os.path.relpath(file) if Path(file).resolve().is_relative_to(Path.cwd()) else file
    except ValueError:  # another drive (Windows)
        return file
