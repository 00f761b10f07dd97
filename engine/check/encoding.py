"""A student's encoder against the engine's: the same ids, and ``decode`` giving the text back.

The student's class is built as CS336's ``Tokenizer`` is, ``CLASS(vocab, merges,
special_tokens)``, from a model's files, and encodes the text given and a set of hard texts
(``hard_texts``): special tokens side by side and inside words, one cut short, two that
overlap (``<|endoftext|>`` and itself twice over: the longer must win), emoji and CJK,
whitespace runs, contractions and numbers, the empty string. The overlapping texts are
encoded with a second special token, the first one twice over, added to the vocabulary at
the next id for both encoders (``with_overlapping``), so neither has to choose its id.

Where the ids differ, ``EncodeDifference`` places the first token that does in the engine's
pre-token there (``encode_steps``), with the merges the rule applied in it, lowest rank first
each round, and the student's tokens over the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.encode.tokenizer import PreTokenTrace, Tokenizer


@dataclass(frozen=True, slots=True)
class HardText:
    """A text both encoders encode, and what it tests."""

    name: str
    text: str
    overlapping: bool = False
    """Encoded with the second, overlapping special token (see ``with_overlapping``)."""


GIVEN = "the text given"
"""The name of the text of ``--text`` or ``--file``."""


def hard_texts(special_tokens: Sequence[str]) -> list[HardText]:
    """The built-in texts: those with special tokens only when the model has one."""
    texts = [
        HardText("the empty string", ""),
        HardText("whitespace runs", "a  b   c\n\n\n  \t\tx  \r\n  end   \n"),
        HardText("emoji and CJK", "Hello 👋🏽 world 🇨🇳! 你好，世界。孙悟空 ñandú 😀😀"),
        HardText("contractions and numbers", "I'll say it's 1,234.56 isn't 2024's 'quoted' they've"),
    ]
    if special_tokens:
        s = special_tokens[0]
        texts += [
            HardText("special tokens side by side", f"{s}{s}one{s} {s}\n{s}"),
            HardText(f"{s} inside words", f"hello{s}world and{s}more: e{s}nd{s}"),
            HardText("a special token cut short", f"{s[:-1]} {s[1:]} {s[: len(s) // 2]}"),
            HardText("overlapping special tokens", f"Hello{s}{s}world{s}!{s}{s}{s}", overlapping=True),
        ]
    return texts


def with_overlapping(vocab: dict[int, bytes], special_tokens: Sequence[str]) -> tuple[dict[int, bytes], list[str]]:
    """The vocabulary and special tokens of the overlapping texts: the first special token
    twice over added at the id after the largest (kept where the vocabulary has it)."""
    doubled = special_tokens[0] * 2
    vocab = dict(vocab)
    if doubled.encode("utf-8") not in vocab.values():
        vocab[max(vocab) + 1] = doubled.encode("utf-8")
    return vocab, [*special_tokens, doubled]


def overlapping_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """``tokenizer`` with the overlapping special token (see ``with_overlapping``)."""
    vocab, specials = with_overlapping(tokenizer.vocab, tokenizer.special_tokens)
    ids = {token: i for i, token in vocab.items()}
    return Tokenizer(
        vocab, tokenizer.merges, {s: ids[s.encode("utf-8")] for s in specials}, tokenizer.pattern, normalizer=tokenizer.normalizer
    )


@dataclass(frozen=True, slots=True)
class EncodeDifference:
    """The first token of a text where the student's ids differ from the engine's."""

    text: HardText
    position: int
    """The token (0-based) where they first differ."""
    rule_ids: list[int]
    your_ids: list[int]
    pretoken: int | None
    """The engine's pre-token (an index into ``traces``) holding that token; None past the end."""
    trace: PreTokenTrace | None
    rule_tokens: list[bytes]
    """The engine's tokens of that pre-token."""
    your_tokens: list[bytes | None]
    """The student's tokens over the same bytes (None: an id the vocabulary lacks, after which
    nothing is placed)."""
    merges: list[tuple[bytes, bytes, int]]
    """The merges the engine applied in that pre-token, in order: left, right, rank."""
    made_by: dict[bytes, int]
    """The merge rank that makes each of the student's tokens there (bytes are made by none)."""


@dataclass(frozen=True, slots=True)
class RoundTrip:
    """``decode(encode(text))`` that is not ``text``."""

    text: HardText
    decoded: str
    at: int
    """The first character where they differ."""


def compare_encoding(tokenizer: Tokenizer, text: HardText, yours: Sequence[int]) -> EncodeDifference | None:
    """Where ``yours`` first differs from ``tokenizer``'s ids for ``text``, if it does."""
    rule = tokenizer.encode(text.text)
    position = next((i for i, (r, y) in enumerate(zip(rule, yours, strict=False)) if r != y), min(len(rule), len(yours)))
    if position == len(rule) == len(yours):
        return None
    vocab = tokenizer.vocab
    traces = tokenizer.encode_steps(text.text)
    pretoken, start, first = None, 0, 0
    for i, trace in enumerate(traces):
        if first + len(trace.ids) > position:
            pretoken = i
            break
        first += len(trace.ids)
        start += len(trace.text.encode("utf-8"))
    if pretoken is None:
        return EncodeDifference(text, position, rule, list(yours), None, None, [], [], [], {})
    trace = traces[pretoken]
    end = start + len(trace.text.encode("utf-8"))
    mine: list[bytes | None] = []
    at = 0
    for token_id in yours:
        token = vocab.get(token_id)
        if at >= end:
            break
        if token is None:
            if at >= start:
                mine.append(None)
            break
        if at + len(token) > start:
            mine.append(token)
        at += len(token)
    merges = [
        (vocab[s.parts[s.chosen]], vocab[s.parts[s.chosen + 1]], rank)
        for s in trace.steps
        if s.chosen is not None
        for rank in (s.ranks[s.chosen],)
        if rank is not None
    ]
    ranks = merge_ranks(tokenizer)
    made_by = {t: ranks[t] for t in mine if t is not None and t in ranks}
    return EncodeDifference(text, position, rule, list(yours), pretoken, trace, [vocab[i] for i in trace.ids], mine, merges, made_by)


def merge_ranks(tokenizer: Tokenizer) -> dict[bytes, int]:
    """The rank of the merge that makes each token (its first, if two make it)."""
    ranks: dict[bytes, int] = {}
    for rank, (left, right) in enumerate(tokenizer.merges):
        ranks.setdefault(left + right, rank)
    return ranks


def compare_decoding(text: HardText, decoded: str) -> RoundTrip | None:
    """``decoded`` against the text it should give back."""
    if decoded == text.text:
        return None
    at = next((i for i, (a, b) in enumerate(zip(text.text, decoded, strict=False)) if a != b), min(len(text.text), len(decoded)))
    return RoundTrip(text, decoded, at)
