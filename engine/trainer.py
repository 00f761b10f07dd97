"""The optimized, steppable BPE trainer (seed lecture 000, PART 3).

Every distinct pre-token ("word") is laid out once in flat arrays, each byte at a token
position with ``prev``/``next`` links inside its word and the word's count as its weight.

- ``pair_positions``: pair -> positions where it starts; append-only, each position is
  checked when used (it may have been merged away since).
- ``pair_counter``: pair -> weighted count.
- a lazy max-heap of ``(count, pair)``: a merge only *lowers* the counts of existing pairs,
  so those entries are left in place and corrected when popped (stale pops); only the new
  pairs, which contain the new token, are pushed.

Merging a pair visits only its positions: for each, the token before (prev_token) and after
(next_token) lose a pair with the old token and gain one with the new token. Those deltas,
summed per neighbour, are applied to ``pair_counter`` once; they are also the ``changes`` of
the step's ``MergeStep``.

Ties go to the lexicographically greater pair of byte strings: the heap orders equal counts
by a key that sorts byte strings in descending order, so the heap top is the exact winner.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heappush, heapreplace

from .corpus import Progress, count_file
from .errors import SettingsError
from .events import MergeStep, Pair, PairChange, StalePop
from .pretokenize import PreTokenizer

_DESC = [chr(256 - x) for x in range(256)]
_END = chr(257)


def _desc_key(token: bytes) -> str:
    """A key whose ascending order is the descending order of byte strings.

    Each byte maps to a code point that decreases as the byte grows; the terminator is
    above them all, so a prefix sorts after its extensions (b"a" < b"ab" becomes key > key).
    """
    return "".join([_DESC[x] for x in token]) + _END


def check_settings(vocab_size: int, special_tokens: Sequence[str]) -> None:
    """Raise ``SettingsError`` for settings that cannot produce a tokenizer."""
    if any(not s for s in special_tokens):
        raise SettingsError("special tokens must not be empty")
    dupes = sorted({s for s in special_tokens if special_tokens.count(s) > 1})
    if dupes:
        raise SettingsError(f"duplicate special token: {dupes[0]!r}")
    floor = 256 + len(special_tokens)
    if vocab_size < floor:
        raise SettingsError(
            f"vocab size {vocab_size} is below {floor} (256 bytes + {len(special_tokens)} special tokens)"
        )


@dataclass(frozen=True, slots=True)
class Word:
    """A distinct pre-token, its corpus count and its current segmentation."""

    text: bytes
    count: int
    parts: list[bytes]


class Trainer:
    """Byte-level BPE training, one merge at a time.

    Ids 0-255 are the bytes, then the special tokens in order, then the merges in order.
    """

    def __init__(
        self,
        word_counts: Mapping[bytes, int],
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        progress: Progress | None = None,
        pattern: str = "gpt2",
    ) -> None:
        check_settings(vocab_size, special_tokens)
        self.pattern = pattern
        """The pre-tokenizer the counts came from, kept for the tokenizer made from them."""
        self.special_tokens = tuple(special_tokens)
        self.vocab_size = vocab_size
        self.progress = progress
        self.stop_requested = False
        """Set (from a signal handler or another thread) to end ``run()`` at a merge boundary."""
        # Most frequent words first: they are the ones worth showing.
        self._words = sorted(word_counts.items(), key=lambda wc: (-wc[1], wc[0]))
        self.corpus_bytes = sum(len(w) * c for w, c in self._words)
        self._build()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_text(
        cls,
        text: str,
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        **kwargs: object,
    ) -> Trainer:
        """Train on a string (pre-tokenized here, in this process)."""
        check_settings(vocab_size, special_tokens)
        counts = PreTokenizer(pattern, special_tokens).count(text)
        return cls(counts, vocab_size, special_tokens, pattern=pattern, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        workers: int | None = None,
        progress: Progress | None = None,
        errors: str = "strict",
    ) -> Trainer:
        """Train on a corpus file, streamed and counted by ``workers`` processes."""
        check_settings(vocab_size, special_tokens)
        pretok = PreTokenizer(pattern, special_tokens)
        counts = count_file(path, pretok, workers=workers, progress=progress, errors=errors)
        return cls(counts, vocab_size, special_tokens, progress=progress, pattern=pattern)

    def _build(self) -> None:
        """Lay out the words and count their pairs: the state before any merge."""
        self._vocab: list[bytes] = [bytes([i]) for i in range(256)]
        self._vocab += [s.encode("utf-8") for s in self.special_tokens]
        self._keys = [_desc_key(t) for t in self._vocab]
        self._first_merge_id = len(self._vocab)
        self.merge_pairs: list[Pair] = []
        self.merge_counts: list[int] = []
        self.stopped_early = False
        self.tokens_in_corpus = self.corpus_bytes

        tokens: list[int] = []
        weight: list[int] = []
        prev_: list[int] = []
        next_: list[int] = []
        starts: list[int] = []
        pair_positions: dict[Pair, list[int]] = {}
        pair_counter: dict[Pair, int] = {}
        for word, count in self._words:
            start = len(tokens)
            n = len(word)
            starts.append(start)
            tokens += word
            weight += [count] * n
            prev_ += range(start - 1, start + n - 1)
            next_ += range(start + 1, start + n + 1)
            prev_[start] = -1
            next_[-1] = -1
            for pos, pair in enumerate(zip(word, word[1:]), start):
                where = pair_positions.get(pair)
                if where is None:
                    pair_positions[pair] = [pos]
                    pair_counter[pair] = count
                else:
                    where.append(pos)
                    pair_counter[pair] += count
        # Sentinel: a missing neighbour (-1) reads as token -2, which never matches a pair.
        tokens.append(-2)
        self._tokens, self._weight, self._prev, self._next = tokens, weight, prev_, next_
        self._starts = starts
        self.pair_positions = pair_positions
        self.pair_counter = pair_counter
        keys = self._keys
        self._heap = [(-c, keys[a], keys[b], a, b) for (a, b), c in pair_counter.items()]
        heapify(self._heap)

    # -- state the app reads ------------------------------------------------------------

    @property
    def vocab(self) -> dict[int, bytes]:
        return dict(enumerate(self._vocab))

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        v = self._vocab
        return [(v[a], v[b]) for a, b in self.merge_pairs]

    @property
    def merges_done(self) -> int:
        return len(self.merge_pairs)

    @property
    def merges_planned(self) -> int:
        return self.vocab_size - self._first_merge_id

    @property
    def finished(self) -> bool:
        return self.stopped_early or self.merges_done >= self.merges_planned

    def token_bytes(self, token_id: int) -> bytes:
        return self._vocab[token_id]

    @property
    def heap_size(self) -> int:
        return len(self._heap)

    def top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` pairs that would win next, in order, with their counts.

        Pops the heap down to ``k`` current entries and puts everything back unchanged, so
        asking does not alter what the next step records.
        """
        heap, counter = self._heap, self.pair_counter
        popped, best = [], []
        while heap and len(best) < k:
            entry = heappop(heap)
            popped.append(entry)
            pair = (entry[3], entry[4])
            if counter.get(pair) == -entry[0]:
                best.append((pair, -entry[0]))
        for entry in popped:
            heappush(heap, entry)
        return best

    def words(self, k: int) -> list[Word]:
        """The ``k`` most frequent words with their current segmentation."""
        out = []
        tokens, next_, vocab = self._tokens, self._next, self._vocab
        for (word, count), pos in zip(self._words[:k], self._starts):
            parts = []
            while pos >= 0:
                parts.append(vocab[tokens[pos]])
                pos = next_[pos]
            out.append(Word(word, count, parts))
        return out

    # -- training -----------------------------------------------------------------------

    def step(self) -> MergeStep | None:
        """Perform exactly one merge and return its full record (``None`` when done)."""
        return self._step(detail=True)

    def run(self, until: int | None = None) -> None:
        """Merge until ``until`` merges are done (default: all planned), or a stop request."""
        target = self.merges_planned if until is None else min(until, self.merges_planned)
        report = self.progress
        gc_was_on = gc.isenabled()
        gc.disable()  # millions of small tuples, no cycles: the collector only costs time
        try:
            while len(self.merge_pairs) < target and not self.stop_requested:
                self._step(detail=False)
                if self.stopped_early:
                    break
                if report is not None and len(self.merge_pairs) % 64 == 0:
                    report("merge", len(self.merge_pairs), self.merges_planned)
        finally:
            if gc_was_on:
                gc.enable()
        if report is not None:
            report("merge", len(self.merge_pairs), self.merges_planned)

    def goto(self, k: int) -> None:
        """Move to the state after ``k`` merges; going back rebuilds and replays."""
        if k < len(self.merge_pairs):
            self._build()
        self.run(until=k)

    def replay(self, merges: Sequence[tuple[bytes, bytes]]) -> bool:
        """Redo saved ``merges``; False if this corpus and settings would choose otherwise."""
        self._build()
        for left, right in merges:
            top = self.top_pairs(1)
            if not top or (self._vocab[top[0][0][0]], self._vocab[top[0][0][1]]) != (left, right):
                return False
            self._step(detail=False)
        return True

    def _step(self, detail: bool) -> MergeStep | None:
        if len(self.merge_pairs) >= self.merges_planned:
            return None
        stale: list[StalePop] | None = [] if detail else None
        pushes: list[tuple[Pair, int]] | None = [] if detail else None
        heap, counter, keys = self._heap, self.pair_counter, self._keys
        # Pop until the top entry's count is current (lazy deletion).
        while heap:
            neg, ka, kb, a, b = heap[0]
            actual = counter.get((a, b), 0)
            if actual == -neg:
                heappop(heap)
                break
            if actual:
                heapreplace(heap, (-actual, ka, kb, a, b))
            else:
                heappop(heap)
            if stale is not None:
                stale.append(StalePop((a, b), -neg, actual))
                if actual:
                    pushes.append(((a, b), actual))  # type: ignore[union-attr]
        else:
            self.stopped_early = True
            return None
        count = actual
        ties = self._ties(count) if detail else []
        record = self._merge(a, b, count, detail)
        if record is not None:
            record.ties = ties
            record.stale = stale  # type: ignore[assignment]
            record.pushes = pushes + record.pushes  # type: ignore[operator]
            record.heap_size = len(heap)
            record.pair_count = len(counter)
        return record

    def _ties(self, count: int) -> list[Pair]:
        """Current pairs with the winner's count, left on the heap (a query, like top_pairs)."""
        heap, counter = self._heap, self.pair_counter
        popped, ties = [], []
        while heap and heap[0][0] == -count:
            entry = heappop(heap)
            popped.append(entry)
            pair = (entry[3], entry[4])
            if counter.get(pair) == count:
                ties.append(pair)
        for entry in popped:
            heappush(heap, entry)
        return ties

    def _merge(self, a: int, b: int, count: int, detail: bool) -> MergeStep | None:
        """Merge every occurrence of (a, b) left to right; apply the pair-count deltas."""
        vocab, keys = self._vocab, self._keys
        new = len(vocab)
        vocab.append(vocab[a] + vocab[b])
        keys.append(_desc_key(vocab[new]))
        self.merge_pairs.append((a, b))
        self.merge_counts.append(count)
        self.tokens_in_corpus -= count

        tokens, next_, prev_, weight = self._tokens, self._next, self._prev, self._weight
        positions = self.pair_positions.pop((a, b))
        del self.pair_counter[(a, b)]
        if a == b:
            positions.sort()  # overlapping runs (a a a) must merge left to right
        # Per neighbour token: summed weight and positions of the new pair it forms.
        prev_w: dict[int, int] = {}
        prev_pos: dict[int, list[int]] = {}
        next_w: dict[int, int] = {}
        next_pos: dict[int, list[int]] = {}
        occurrences = 0
        for pos in positions:
            if tokens[pos] != a:
                continue
            nxt = next_[pos]
            if tokens[nxt] != b:  # also rejects the sentinel (no next token)
                continue
            w = weight[pos]
            prv = prev_[pos]
            if prv >= 0:
                x = tokens[prv]
                if x in prev_w:
                    prev_w[x] += w
                    prev_pos[x].append(prv)
                else:
                    prev_w[x] = w
                    prev_pos[x] = [prv]
            nn = next_[nxt]
            if nn >= 0:
                y = tokens[nn]
                if y in next_w:
                    next_w[y] += w
                    next_pos[y].append(pos)
                else:
                    next_w[y] = w
                    next_pos[y] = [pos]
                prev_[nn] = pos
            next_[pos] = nn
            tokens[pos] = new
            tokens[nxt] = -1
            occurrences += 1

        # (x, a) -> (x, new) and (b, y) -> (new, y), one delta per distinct neighbour.
        delta: dict[Pair, int] = {}
        side: dict[Pair, str] = {}
        for x, w in prev_w.items():
            delta[(x, new)] = delta.get((x, new), 0) + w
            delta[(x, a)] = delta.get((x, a), 0) - w
            if detail:
                side.setdefault((x, new), "prev")
                side.setdefault((x, a), "prev")
        for y, w in next_w.items():
            delta[(new, y)] = delta.get((new, y), 0) + w
            delta[(b, y)] = delta.get((b, y), 0) - w
            if detail:
                side.setdefault((new, y), "next")
                side.setdefault((b, y), "next")

        counter, pair_positions, heap = self.pair_counter, self.pair_positions, self._heap
        changes: list[PairChange] = []
        pushes: list[tuple[Pair, int]] = []
        merged = (a, b)
        for pair, d in delta.items():
            if not d or pair == merged:
                continue
            before = counter.get(pair, 0)
            after = before + d
            if after:
                counter[pair] = after
                if not before:  # a new pair: the only kind whose count ever rises
                    heappush(heap, (-after, keys[pair[0]], keys[pair[1]], pair[0], pair[1]))
                    if detail:
                        pushes.append((pair, after))
            else:
                del counter[pair]
                pair_positions.pop(pair, None)
            if detail:
                changes.append(PairChange(pair, before, after, side[pair]))
        for x, where in prev_pos.items():
            self._add_positions((x, new), where)
        for y, where in next_pos.items():
            self._add_positions((new, y), where)

        if not detail:
            return None
        return MergeStep(
            index=len(self.merge_pairs),
            pair=merged,
            new_id=new,
            token=vocab[new],
            count=count,
            occurrences=occurrences,
            changes=changes,
            pushes=pushes,
        )

    def _add_positions(self, pair: Pair, where: list[int]) -> None:
        if pair not in self.pair_counter:
            return
        known = self.pair_positions.get(pair)
        if known is None:
            self.pair_positions[pair] = where
        else:
            known.extend(where)


def train_bpe(
    input_path: str | os.PathLike[str],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    **options: object,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train on a file; returns ``(vocab, merges)`` (the CS336 ``run_train_bpe`` shape).

    Options: ``pattern`` ("gpt2", "gpt4" or a regex), ``workers`` (processes for counting,
    default all cores), ``progress`` (callback ``(phase, done, total)``), ``errors``
    ("strict" or "replace" for invalid UTF-8).
    """
    trainer = Trainer.from_file(input_path, vocab_size, list(special_tokens), **options)  # type: ignore[arg-type]
    trainer.run()
    return trainer.vocab, trainer.merges
