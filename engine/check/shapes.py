"""What a student's code returned, checked against the shape asked for.

A trainer returns ``(vocab, merges)`` as CS336's ``run_train_bpe`` does: ``vocab`` a
``dict[int, bytes]``, ``merges`` a ``list[tuple[bytes, bytes]]``. An encoder's ``encode``
returns a ``list[int]`` and its ``decode`` a ``str``. Anything else is a ``ShapeError``
naming the first value that is wrong and what was expected there: ``merges[3] is a str
('t h'), expected a tuple of two bytes (merges: list[tuple[bytes, bytes]])``. A list of two bytes is wrong too: CS336's tests
compare the merges with ``==``, and ``[a, b] != (a, b)``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence

from engine.errors import BpeError

TRAINING = "(vocab, merges): vocab a dict[int, bytes], merges a list[tuple[bytes, bytes]]"
"""What a trainer returns, as the lines name it."""


class ShapeError(BpeError):
    """A student's code returned something of another shape than the one asked for."""


def described(value: object, limit: int = 32) -> str:
    """``a str ('t h')``, ``a tuple of 3``, ``a dict``: what a value is, briefly."""
    kind = type(value).__name__
    article = "an" if kind[:1] in "aeiou" else "a"
    if isinstance(value, (tuple, list)) and not isinstance(value, str):
        return f"{article} {kind} of {len(value)}"
    if isinstance(value, (str, bytes, int, float)) and not isinstance(value, bool):
        shown = repr(value)
        return f"{article} {kind} ({shown if len(shown) <= limit else shown[: limit - 1] + '…'})"
    return f"{article} {kind}"


def _integer(value: object) -> int | None:
    """``value`` as an int if it is one (NumPy's integers too), not a bool; else None."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        return None
    return operator.index(value)  # type: ignore[arg-type]


def training_result(value: object) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """``value`` as ``(vocab, merges)`` in plain dicts, lists and tuples; ``ShapeError`` if it
    is not that shape."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ShapeError(f"returned {described(value)}, expected {TRAINING}")
    vocab, merges = value
    if not isinstance(vocab, Mapping):
        raise ShapeError(f"vocab (the first of the two returned) is {described(vocab)}, expected a dict[int, bytes]")
    out_vocab: dict[int, bytes] = {}
    for key, token in vocab.items():
        token_id = _integer(key)
        if token_id is None:
            raise ShapeError(f"vocab has the key {key!r}, {described(key)}: expected a dict[int, bytes], ids as int")
        if not isinstance(token, bytes):
            raise ShapeError(f"vocab[{key}] is {described(token)}, expected bytes (vocab: dict[int, bytes])")
        out_vocab[token_id] = bytes(token)
    if not isinstance(merges, Sequence) or isinstance(merges, (str, bytes)):
        raise ShapeError(f"merges (the second of the two returned) is {described(merges)}, expected a list[tuple[bytes, bytes]]")
    out_merges: list[tuple[bytes, bytes]] = []
    for i, merge in enumerate(merges):
        if not isinstance(merge, tuple) or len(merge) != 2:
            raise ShapeError(f"merges[{i}] is {described(merge)}, expected a tuple of two bytes (merges: list[tuple[bytes, bytes]])")
        for side, token in zip(("left", "right"), merge, strict=True):
            if not isinstance(token, bytes):
                raise ShapeError(f"merges[{i}]'s {side} token is {described(token)}, expected bytes (merges: list[tuple[bytes, bytes]])")
        out_merges.append((bytes(merge[0]), bytes(merge[1])))
    return out_vocab, out_merges


def encode_result(value: object, call: str) -> list[int]:
    """What ``encode`` returned, as a list of ints; ``ShapeError`` naming ``call`` if not."""
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ShapeError(f"{call} returned {described(value)}, expected a list[int]")
    ids = []
    for i, item in enumerate(value):
        token_id = _integer(item)
        if token_id is None:
            raise ShapeError(f"{call}[{i}] is {described(item)}, expected an int (encode returns a list[int])")
        ids.append(token_id)
    return ids


def decode_result(value: object, call: str) -> str:
    """What ``decode`` returned; ``ShapeError`` naming ``call`` if it is not a ``str``."""
    if not isinstance(value, str):
        raise ShapeError(f"{call} returned {described(value)}, expected a str")
    return str(value)
