"""Token ids given to ``decode``: a list, a tuple or an array of ints read where it lies,
anything else read once (``listed``), and joined in one pass in C (``_encoder_core.Vocab``),
which fails on any id that is not a Python int (a bool is not) with an entry; only then
are they made Python ints, or the ``TokenIdError`` names the first bad one and its index
(``as_ids``); ``joined`` does all of it. ``TokenTexts`` joins the texts of whole tokens so.
One id looked up (every tokenizer's and trainer's ``token``) is checked by ``as_id``, in
the same words without the index."""

from __future__ import annotations

import operator
import reprlib
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any, TypeVar

from engine.encode._encoder_core import Vocab
from engine.errors import TokenIdError, one_line


class TokenTexts:
    """The text of each id of a vocabulary of whole tokens: ``first[i]`` at the start of a
    decode, ``later[i]`` after another token; the later ones joined in C."""

    def __init__(self, first: Sequence[str], later: Sequence[str]) -> None:
        self.first = first
        self.later = later
        encoded = [t.encode("utf-8", "surrogatepass") for t in later]
        self._widths = list(map(len, encoded))
        self._table = Vocab(dict(enumerate(encoded)))

    def __reduce__(self) -> tuple[object, ...]:
        return (TokenTexts, (self.first, self.later))

    def decode(self, ids: Iterable[int]) -> str:
        """The texts of ``ids`` joined; ``TokenIdError`` names the first bad id and where it is."""
        ids, data = self._joined(ids)
        return self.first[ids[0]] + data[self._widths[ids[0]] :].decode("utf-8", "surrogatepass") if ids else ""

    def checked(self, ids: Iterable[int]) -> Sequence[int]:
        """``ids`` as a list or tuple of Python ints, or the ``TokenIdError`` naming the first bad one."""
        return self._joined(ids)[0]

    def _joined(self, ids: Iterable[int]) -> tuple[Sequence[int], bytes]:
        if type(ids) is not list and type(ids) is not tuple:
            ids = listed(ids)
        try:
            return ids, self._table.decode_bytes(ids)
        except (KeyError, TypeError):
            ids = as_ids(ids, len(self.later) - 1)
            return ids, self._table.decode_bytes(ids)


T = TypeVar("T")


def joined(join: Callable[[Any], T], ids: Iterable[int], top: int, known: Container[int] | None = None) -> T:
    """``join`` (a ``Vocab``'s ``decode`` or ``decode_bytes``) of ``ids``: a list, a tuple or a
    one-dimensional array of ints (NumPy's, ``array``'s, a ``memoryview`` such as
    ``FlatIds.ids``) read where it lies, with no Python int made; anything else read once as
    a list. An id that is no entry of ``0``-``top`` (and of ``known``): ``TokenIdError``."""
    if type(ids) is not list and type(ids) is not tuple:
        try:
            return join(ids)
        except (KeyError, TypeError):  # not an array of ints (left unread), or a bad id in it
            ids = listed(ids)
    try:
        return join(ids)
    except (KeyError, TypeError):
        return join(as_ids(ids, top, known))


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
    """``ids`` as Python ints (NumPy's made ints), or the ``TokenIdError`` of ``as_id``
    naming the first bad one and its index."""
    return [as_id(i, top, known, k) for k, i in enumerate(ids)]


def as_id(i: object, top: int, known: Container[int] | None = None, index: int | None = None) -> int:
    """``i`` as a Python int (NumPy's made one) that is an id of the vocabulary ``0``-``top``
    (and in ``known``, where its ids have gaps), or the ``TokenIdError`` saying that it is a
    bool (a mask passed as ids, say), not an integer or not an id of the vocabulary, with
    its ``index`` among the ids given."""
    if type(i).__name__ in ("bool", "bool_"):  # Python's, and NumPy's (whose is not an int)
        raise TokenIdError(f"token id {i}{_at(index)} is a bool, not a token id")
    try:
        n = operator.index(i)  # type: ignore[arg-type]
    except TypeError:
        raise TokenIdError(f"token id {one_line(reprlib.repr(i))}{_at(index)} is not an integer") from None
    if not 0 <= n <= top or (known is not None and n not in known):
        raise TokenIdError(f"token id {n}{_at(index)} is not in the vocabulary (0-{top})")
    return n


def _at(index: int | None) -> str:
    return "" if index is None else f" at index {index}"
