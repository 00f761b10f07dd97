"""Encoding and decoding with a trained vocabulary (seed lecture 000, PART 4).

Special tokens are matched first; the rest is pre-tokenized and each pre-token is merged
by lowest merge rank first: list every adjacent pair with its rank, merge the lowest
(leftmost on a tie), repeat until no pair is in the merge list. This is what GPT-2 and
tiktoken do. ``encode_steps`` records the same loop as it runs, for the encode view.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .pretokenize import PreTokenizer
from .trainer import Trainer

Pair = tuple[int, int]


@dataclass(frozen=True, slots=True)
class EncodeStep:
    """One round of the merge loop on one pre-token."""

    parts: list[int]
    """Token ids before this round."""
    ranks: list[int | None]
    """Merge rank of each adjacent pair ``(parts[i], parts[i+1])``; None: not in merges."""
    chosen: int | None
    """Index of the pair merged now (lowest rank, leftmost); None: nothing left to merge."""
    after: list[int]
    """Token ids after this round."""


@dataclass(frozen=True, slots=True)
class PreTokenTrace:
    """The story of one pre-token (or special token) of an encode."""

    text: str
    special: bool
    steps: list[EncodeStep]
    ids: list[int]


class Tokenizer:
    """A byte-level BPE tokenizer: ``vocab`` (id -> bytes) and ``merges`` in rank order."""

    def __init__(
        self,
        vocab: dict[int, bytes],
        merges: list[tuple[bytes, bytes]],
        special_tokens: list[str] | None = None,
        pattern: str = "gpt2",
    ) -> None:
        self.vocab = dict(vocab)
        self.merges = list(merges)
        self.special_tokens = list(special_tokens or [])
        self.pattern = pattern
        self.encoder = {token: i for i, token in self.vocab.items()}
        for s in self.special_tokens:
            if s.encode("utf-8") not in self.encoder:
                new_id = max(self.vocab, default=-1) + 1
                self.vocab[new_id] = s.encode("utf-8")
                self.encoder[s.encode("utf-8")] = new_id
        self.special_ids = {s: self.encoder[s.encode("utf-8")] for s in self.special_tokens}
        self.pretokenizer = PreTokenizer(pattern, self.special_tokens)
        missing = [b for b in range(256) if bytes([b]) not in self.encoder]
        if missing:
            raise ValueError(f"vocabulary lacks the single byte {missing[0]:#04x}")
        self._byte_ids = [self.encoder[bytes([b])] for b in range(256)]
        self._merge_of: dict[Pair, tuple[int, int]] = {}
        for rank, (left, right) in enumerate(merges):
            try:
                pair = (self.encoder[left], self.encoder[right])
                merged = self.encoder[left + right]
            except KeyError:
                raise ValueError(f"merge {rank} ({left!r}, {right!r}) uses a token not in the vocabulary") from None
            self._merge_of.setdefault(pair, (rank, merged))
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_trainer(cls, trainer: Trainer) -> Tokenizer:
        """The tokenizer as trained so far."""
        return cls(trainer.vocab, trainer.merges, list(trainer.special_tokens), trainer.pattern)

    # -- the merge loop -----------------------------------------------------------------

    def _bpe(self, piece: bytes, steps: list[EncodeStep] | None = None) -> list[int]:
        """Merge one pre-token by lowest rank first; record each round into ``steps``."""
        byte_ids = self._byte_ids
        ids = [byte_ids[b] for b in piece]
        merge_of = self._merge_of
        while True:
            best_rank = best = new = -1
            ranks: list[int | None] | None = [] if steps is not None else None
            for i in range(len(ids) - 1):
                m = merge_of.get((ids[i], ids[i + 1]))
                if ranks is not None:
                    ranks.append(m[0] if m else None)
                if m is not None and (best < 0 or m[0] < best_rank):
                    best_rank, best, new = m[0], i, m[1]
            if steps is not None:
                before = list(ids)
            if best >= 0:
                ids[best : best + 2] = [new]
            if steps is not None:
                steps.append(EncodeStep(before, ranks, best if best >= 0 else None, list(ids)))  # type: ignore[arg-type]
            if best < 0:
                return ids

    def _encode_chunk(self, chunk: str) -> list[int]:
        ids: list[int] = []
        for pretoken in self.pretokenizer.pretokens(chunk):
            ids += self._bpe(pretoken.encode("utf-8"))
        return ids

    # -- public API -----------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        out: list[int] = []
        cache = self._cache
        pretok = self.pretokenizer
        for piece, special in pretok.split_special(text):
            if special:
                out.append(self.special_ids[piece])
                continue
            for chunk in pretok.chunks(piece):
                ids = cache.get(chunk)
                if ids is None:
                    ids = cache[chunk] = self._encode_chunk(chunk)
                out += ids
        return out

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily encode a stream of strings; the ids equal ``encode`` of their concatenation."""
        buffer = ""
        for text in iterable:
            buffer += text
            cut = self.pretokenizer.safe_cut(buffer)
            if cut:
                yield from self.encode(buffer[:cut])
                buffer = buffer[cut:]
        if buffer:
            yield from self.encode(buffer)

    def encode_steps(self, text: str) -> list[PreTokenTrace]:
        """Every pre-token of ``text`` with each round of its merge loop (see ``EncodeStep``)."""
        traces = []
        for piece, special in self.pretokenizer.split_special(text):
            if special:
                traces.append(PreTokenTrace(piece, True, [], [self.special_ids[piece]]))
                continue
            for pretoken in self.pretokenizer.pretokens(piece):
                steps: list[EncodeStep] = []
                ids = self._bpe(pretoken.encode("utf-8"), steps)
                traces.append(PreTokenTrace(pretoken, False, steps, ids))
        return traces

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        vocab = self.vocab
        try:
            return b"".join([vocab[i] for i in ids])
        except (KeyError, TypeError):
            bad = next(i for i in ids if not isinstance(i, int) or i not in vocab)
            raise ValueError(f"token id {bad!r} is not in the vocabulary (0-{max(vocab)})") from None

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; invalid UTF-8 (a token may hold half a character) becomes U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")
