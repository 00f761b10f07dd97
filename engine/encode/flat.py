"""Many texts' ids in one buffer with each text's offsets: what every tokenizer's
``encode_batch_flat`` gives, the form NumPy, a file of ids and the fastest peers' batch calls
use (no list of ints made a text)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate, chain
from typing import NamedTuple, Protocol

UINT32 = next(code for code in "IL" if array(code).itemsize == 4)
"""The ``array`` type code of unsigned 32-bit ints on this machine."""


class FlatIds(NamedTuple):
    """The ids of many texts in one buffer: text ``k``'s ids are
    ``ids[offsets[k]:offsets[k + 1]]``. Both are memoryviews (format ``"I"``, unsigned 32-bit,
    and ``"q"``, signed 64-bit; native byte order), which NumPy takes without a copy
    (``numpy.frombuffer(flat.ids, numpy.uint32)``), as it does the offsets."""

    ids: memoryview
    offsets: memoryview
    """One more than the texts, from 0 to ``len(ids)``."""


def flat_ids(lists: Sequence[Sequence[int]]) -> FlatIds:
    """The lists of ids of texts, put in one buffer."""
    ids = array(UINT32, chain.from_iterable(lists))
    return FlatIds(memoryview(ids), memoryview(array("q", accumulate(map(len, lists), initial=0))))


class _Batches(Protocol):
    def encode_batch(self, texts: Iterable[str], workers: int | None = None) -> list[list[int]]: ...


class FlatBatches:
    """``encode_batch_flat`` for a tokenizer whose ``encode_batch`` makes the lists."""

    def encode_batch_flat(self: _Batches, texts: Iterable[str], workers: int | None = None) -> FlatIds:
        """``encode_batch``'s ids in one buffer, with the offsets of each text's (``FlatIds``)."""
        return flat_ids(self.encode_batch(texts, workers))
