"""Token ids given to ``decode``: read once (``listed``), and, where joining them in C
(``_encoder_core.Vocab``) failed, made Python ints or the ``TokenIdError`` naming the first
bad one and its index (``as_ids``)."""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Container, Iterable, Sequence

from engine.errors import TokenIdError, one_line


def listed(ids: Iterable[int]) -> list[int]:
    """``ids`` as a list, read once (an iterator can be): a NumPy array's or an ``array``'s
    through its ``tolist``, as Python ints."""
    tolist = getattr(ids, "tolist", None)
    items = tolist() if callable(tolist) else ids
    try:
        each = iter(items)
    except TypeError:
        raise TokenIdError(f"token ids must be a sequence of integers, not {one_line(reprlib.repr(ids))}") from None
    return items if isinstance(items, list) else list(each)


def as_ids(ids: Sequence[object], top: int, known: Container[int] | None = None) -> list[int]:
    """``ids`` as Python ints (NumPy's made ints), or the ``TokenIdError`` naming the first
    that is not an integer or not an id of the vocabulary, and its index."""
    out = []
    for k, i in enumerate(ids):
        try:
            n = operator.index(i)  # type: ignore[arg-type]
        except TypeError:
            raise TokenIdError(f"token id {one_line(reprlib.repr(i))} at index {k} is not an integer") from None
        if not 0 <= n <= top or (known is not None and n not in known):
            raise TokenIdError(f"token id {n} at index {k} is not in the vocabulary (0-{top})")
        out.append(n)
    return out
