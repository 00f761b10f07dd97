"""The optimized, steppable BPE trainer (seed lecture 000, PART 3).

Every distinct pre-token ("word") is laid out once in flat arrays, each byte at a token
position with ``prev``/``next`` links and the word's count as its weight; a separator
token between words marks their edges.

- ``pair_positions``: pair -> positions where it starts; append-only, each position is
  checked when used (it may have been merged away since).
- ``pair_counter``: pair -> weighted count.
- a lazy max-heap of ``(count, pair)``: a merge only *lowers* the counts of existing pairs,
  so those entries are left in place and corrected when popped (stale pops). Only new
  pairs, which contain the new token, are queued: on the heap if their count equals the
  count just merged, else parked in a bucket per count, since they cannot win before the
  heap falls to that count.

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
from array import array
from bisect import insort
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from heapq import heapify, heappop, heappush, heapreplace

from .corpus import Progress, count_file
from .errors import CorpusError, SettingsError
from .events import MergeStep, Pair, PairChange, StalePop
from .pretokenize import PreTokenizer

_Start = tuple[list[int], array, array, dict[Pair, list[int]], dict[Pair, int]]
"""tokens, prev, next, pair_positions, pair_counter before any merge."""

TIE_LIMIT = 5
"""How many tied pairs a ``MergeStep`` lists."""

SEPARATOR = -1
"""The token between words, and of positions merged away: it is never part of a pair."""

_DESC = [chr(256 - x) for x in range(256)]
_END = chr(257)


def _desc_key(token: bytes) -> str:
    """A key whose ascending order is the descending order of byte strings.

    Each byte maps to a code point that decreases as the byte grows; the terminator is
    above them all, so a prefix sorts after its extensions (b"a" < b"ab" becomes key > key).
    """
    return "".join([_DESC[x] for x in token]) + _END


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: training makes many small containers and no
    cycles, so collections during it only cost time."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


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
            f"vocab size {vocab_size} is below {floor} (256 bytes + {len(special_tokens)} special "
            f"token{'' if len(special_tokens) == 1 else 's'})"
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
        self._start: _Start | None = None
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
        """Train on a corpus file, streamed and counted by ``workers`` processes.

        ``CorpusError`` if it cannot be read, or holds no text besides special tokens.
        """
        check_settings(vocab_size, special_tokens)
        pretok = PreTokenizer(pattern, special_tokens)
        counts = count_file(path, pretok, workers=workers, progress=progress, errors=errors)
        if not counts:
            what = "it holds nothing but special tokens" if os.path.getsize(path) else "the file is empty"
            raise CorpusError(f"{path}: {what}: no text to train on")
        return cls(counts, vocab_size, special_tokens, progress=progress, pattern=pattern)

    def _build(self) -> None:
        """Set up the state before any merge: from a saved copy after the first time."""
        if self._start is None:
            with gc_paused():
                self._start = self._lay_out()
        tokens, prev_, next_, pair_positions, pair_counter = self._start
        self._tokens = tokens.copy()
        self._prev = array("q", prev_)
        self._next = array("q", next_)
        # The starting position lists are never changed in place, only dropped: a shallow
        # copy of the dict is a full copy of the state.
        self.pair_positions = dict(pair_positions)
        self.pair_counter = dict(pair_counter)
        self._vocab: list[bytes] = [bytes([i]) for i in range(256)]
        self._vocab += [s.encode("utf-8") for s in self.special_tokens]
        self._keys = [_desc_key(t) for t in self._vocab]
        self._first_merge_id = len(self._vocab)
        self.merge_pairs: list[Pair] = []
        self.merge_counts: list[int] = []
        self.stopped_early = False
        self.tokens_in_corpus = self.corpus_bytes
        self._requeue()

    def _lay_out(self) -> _Start:
        """Lay out the words and count their pairs."""
        # Words side by side, each followed by a separator (token -1, weight 0), so that
        # prev/next start as plain neighbours and a word's edge reads as "no token".
        tokens: list[int] = [SEPARATOR]
        weight: list[int] = [0]
        starts: list[int] = []
        pair_positions: dict[Pair, list[int]] = {}
        pair_counter: dict[Pair, int] = {}
        get = pair_positions.get
        for word, count in self._words:
            start = len(tokens)
            starts.append(start)
            tokens += word
            tokens.append(SEPARATOR)
            weight += [count] * len(word)
            weight.append(0)
            for pos, pair in enumerate(zip(word, word[1:]), start):
                where = get(pair)
                if where is None:
                    pair_positions[pair] = [pos]
                    pair_counter[pair] = count
                else:
                    where.append(pos)
                    pair_counter[pair] += count
        self._weight = weight  # never changes: merged positions keep their word's count
        self._starts = starts
        n = len(tokens)
        # Links as arrays: a list would hold a distinct int object for every position.
        return tokens, array("q", range(-1, n - 1)), array("q", range(1, n + 1)), pair_positions, pair_counter

    def _requeue(self) -> None:
        """Put every current pair on a fresh heap, with no stale entries and none parked."""
        keys = self._keys
        self._heap = [(-c, keys[a], keys[b], a, b) for (a, b), c in self.pair_counter.items()]
        heapify(self._heap)
        self._parked: dict[int, list[Pair]] = {}
        self._parked_max = 0

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
        """The ``k`` pairs that would win next, in order, with their counts (a pure query).

        A stale heap entry still stands for its pair, at the pair's current count, which is
        never above the stored one: the walk can stop once stored counts fall below the
        k-th best current count.
        """
        if k <= 0:
            return []
        counter = self.pair_counter
        best: list[tuple[int, str, str, int, int]] = []
        for neg, ka, kb, a, b in self._in_order():
            if len(best) == k and -neg < -best[-1][0]:
                break
            actual = counter.get((a, b))
            if actual:
                insort(best, (-actual, ka, kb, a, b))
                del best[k:]
        keys = self._keys
        for level, bucket in self._parked.items():
            if len(best) == k and level < -best[-1][0]:
                continue
            for a, b in bucket:
                actual = counter.get((a, b))
                if actual:
                    insort(best, (-actual, keys[a], keys[b], a, b))
                    del best[k:]
        return [((a, b), -neg) for neg, _, _, a, b in best]

    def _in_order(self) -> Iterator[tuple[int, str, str, int, int]]:
        """Heap entries in ascending order, read without popping.

        A small frontier heap walks the big heap's tree from the root, so the next entry in
        order is always a child of one already seen: the first k cost O(k log k).
        """
        heap = self._heap
        if not heap:
            return
        frontier = [(heap[0], 0)]
        size = len(heap)
        while frontier:
            entry, i = heappop(frontier)
            yield entry
            child = 2 * i + 1
            if child < size:
                heappush(frontier, (heap[child], child))
                if child + 1 < size:
                    heappush(frontier, (heap[child + 1], child + 1))

    def words(self, k: int) -> list[Word]:
        """The ``k`` most frequent words with their current segmentation."""
        out = []
        tokens, next_, vocab = self._tokens, self._next, self._vocab
        for (word, count), pos in zip(self._words[:k], self._starts):
            parts = []
            while tokens[pos] != SEPARATOR:
                parts.append(vocab[tokens[pos]])
                pos = next_[pos]
            out.append(Word(word, count, parts))
        return out

    # -- training -----------------------------------------------------------------------

    def step(self) -> MergeStep | None:
        """Perform exactly one merge and return its full record (``None`` when done)."""
        with gc_paused():
            return self._step(detail=True)

    def steps(self, until: int | None = None) -> Iterator[MergeStep]:
        """The detailed stream: merge until ``until`` (default: all planned) or a stop
        request, yielding each merge's record.

        The garbage collector stays paused while the iteration is open, as during ``run()``:
        between separate ``step()`` calls it would keep scanning the trainer's containers.
        """
        target = self.merges_planned if until is None else min(until, self.merges_planned)
        with gc_paused():
            while len(self.merge_pairs) < target and not self.stop_requested:
                record = self._step(detail=True)
                if record is None:
                    return
                yield record

    def run(self, until: int | None = None) -> None:
        """Merge until ``until`` merges are done (default: all planned), or a stop request."""
        target = self.merges_planned if until is None else min(until, self.merges_planned)
        report = self.progress
        with gc_paused():
            while len(self.merge_pairs) < target and not self.stop_requested:
                self._step(detail=False)
                if self.stopped_early:
                    break
                if report is not None and len(self.merge_pairs) % 64 == 0:
                    report("merge", len(self.merge_pairs), self.merges_planned)
        if report is not None:
            report("merge", len(self.merge_pairs), self.merges_planned)

    def goto(self, k: int) -> None:
        """Move to the state after ``k`` merges.

        Going back rebuilds the start and redoes the first ``k`` merges, which are known:
        no pair is selected or queued on the way, and the heap is built once at the end.
        """
        if k >= len(self.merge_pairs):
            self.run(until=k)
            return
        redo = self.merge_pairs[:k]
        self._build()
        with gc_paused():
            for a, b in redo:
                self._merge(a, b, self.pair_counter[(a, b)], detail=False, queue=False)
            self._requeue()

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
        winner = self._select(stale, pushes)
        if winner is None:
            self.stopped_early = True
            return None
        a, b, count = winner
        ties = self._ties(count) if detail else []
        record = self._merge(a, b, count, detail)
        if record is not None:
            record.ties = ties
            record.stale = stale  # type: ignore[assignment]
            record.pushes = pushes + record.pushes  # type: ignore[operator]
            record.heap_size = len(self._heap)
            record.pair_count = len(self.pair_counter)
        return record

    def _select(
        self, stale: list[StalePop] | None, pushes: list[tuple[Pair, int]] | None
    ) -> tuple[int, int, int] | None:
        """Pop the winning pair: the heap top once it is current and no parked pair can match it."""
        heap, counter = self._heap, self.pair_counter
        while True:
            while heap:  # lazy deletion: correct or drop stale entries until the top is current
                neg, ka, kb, a, b = heap[0]
                actual = counter.get((a, b), 0)
                if actual == -neg:
                    break
                if actual:
                    heapreplace(heap, (-actual, ka, kb, a, b))
                else:
                    heappop(heap)
                if stale is not None:
                    stale.append(StalePop((a, b), -neg, actual))
                    if actual:
                        pushes.append(((a, b), actual))  # type: ignore[union-attr]
            top = -heap[0][0] if heap else 0
            if self._parked_max and self._parked_max >= top:
                self._release(top, pushes)
                continue
            if not heap:
                return None
            heappop(heap)
            return a, b, top

    def _release(self, floor: int, pushes: list[tuple[Pair, int]] | None) -> None:
        """Move every parked bucket of count ``floor`` or more onto the heap."""
        counter, keys, parked = self.pair_counter, self._keys, self._parked
        entries = []
        for level in [c for c in parked if c >= floor]:
            for pair in parked.pop(level):
                actual = counter.get(pair)
                if actual:  # parked counts, like heap entries, may have fallen since
                    entries.append((-actual, keys[pair[0]], keys[pair[1]], pair[0], pair[1]))
                    if pushes is not None:
                        pushes.append((pair, actual))
        self._parked_max = max(parked, default=0)
        heap = self._heap
        if len(entries) > len(heap) // 8:
            heap += entries
            heapify(heap)
        else:
            for entry in entries:
                heappush(heap, entry)

    def _ties(self, count: int) -> list[Pair]:
        """Up to ``TIE_LIMIT`` current pairs with the winner's count, in heap order.

        Low counts can tie by the hundred; listing more than a screenful would make a
        detailed step cost far more than the merge itself. (No parked pair can tie: the
        winner is only taken once every bucket at its count is on the heap.)
        """
        heap = self._heap
        if not heap or heap[0][0] != -count:
            return []
        counter = self.pair_counter
        ties: list[Pair] = []
        for neg, _, _, a, b in self._in_order():
            if neg != -count or len(ties) == TIE_LIMIT:
                break
            if counter.get((a, b)) == count:
                ties.append((a, b))
        return ties

    def _merge(self, a: int, b: int, count: int, detail: bool, queue: bool = True) -> MergeStep | None:
        """Merge every occurrence of (a, b) left to right; apply the pair-count deltas.

        ``queue=False`` leaves new pairs off the heap and out of the buckets (``goto``
        rebuilds the heap afterwards).
        """
        vocab, keys = self._vocab, self._keys
        new = len(vocab)
        vocab.append(vocab[a] + vocab[b])
        keys.append(_desc_key(vocab[new]))
        merged = (a, b)
        self.merge_pairs.append(merged)
        self.merge_counts.append(count)
        self.tokens_in_corpus -= count

        counter, pair_positions = self.pair_counter, self.pair_positions
        tokens, next_, prev_, weight = self._tokens, self._next, self._prev, self._weight
        positions = pair_positions.pop(merged)
        del counter[merged]
        if a == b:
            positions.sort()  # overlapping runs (a a a) must merge left to right
        # Per neighbour token, the positions of the new pair it forms with the merged token.
        prev_pos: dict[int, list[int]] = {}
        next_pos: dict[int, list[int]] = {}
        for pos in positions:
            if tokens[pos] != a:
                continue
            nxt = next_[pos]
            if tokens[nxt] != b:
                continue
            prv = prev_[pos]
            x = tokens[prv]
            if x != SEPARATOR:
                where = prev_pos.get(x)
                if where is None:
                    prev_pos[x] = [prv]
                else:
                    where.append(prv)
            nn = next_[nxt]
            y = tokens[nn]
            if y != SEPARATOR:
                where = next_pos.get(y)
                if where is None:
                    next_pos[y] = [pos]
                else:
                    where.append(pos)
            prev_[nn] = pos
            next_[pos] = nn
            tokens[pos] = new
            tokens[nxt] = SEPARATOR

        # Each neighbour x moves its summed weight from (x, a) to (x, new); each y from
        # (b, y) to (new, y). Counts may pass through negative values when a pair is both
        # (the word "abab": (new, a) is gained on one side and lost on the other).
        weight_at = weight.__getitem__
        get = counter.get
        before: dict[Pair, int] | None = {} if detail else None
        fresh: dict[Pair, None] = {}
        old: list[Pair] = []
        for side, neighbours in ((0, prev_pos), (1, next_pos)):
            for t, where in neighbours.items():
                w = sum(map(weight_at, where))
                lost, gained = ((t, a), (t, new)) if side == 0 else ((b, t), (new, t))
                if before is not None:
                    before.setdefault(lost, get(lost, 0))
                    before.setdefault(gained, get(gained, 0))
                counter[lost] = get(lost, 0) - w
                counter[gained] = get(gained, 0) + w
                old.append(lost)
                fresh[gained] = None
                known = pair_positions.get(gained)
                if known is None:
                    pair_positions[gained] = where
                else:
                    known.extend(where)
        counter.pop(merged, None)  # (a, a) is also a "lost" pair of its own merge
        pair_positions.pop(merged, None)
        for pair in old:
            if not get(pair, 1):
                del counter[pair]
                pair_positions.pop(pair, None)

        # New pairs are the only ones whose count ever rises. Below the count just merged
        # they cannot win the next step: park them in a bucket instead of the heap.
        heap, parked = self._heap, self._parked
        pushes: list[tuple[Pair, int]] = []
        parked_now = 0
        for pair in fresh:
            c = get(pair, 0)
            if c <= 0:
                counter.pop(pair, None)
                pair_positions.pop(pair, None)
            elif not queue:
                pass
            elif c < count:
                bucket = parked.get(c)
                if bucket is None:
                    parked[c] = [pair]
                    if c > self._parked_max:
                        self._parked_max = c
                else:
                    bucket.append(pair)
                parked_now += 1
            else:
                heappush(heap, (-c, keys[pair[0]], keys[pair[1]], pair[0], pair[1]))
                if detail:
                    pushes.append((pair, c))

        if before is None:
            return None
        changes = []
        for pair, was in before.items():
            now = get(pair, 0)
            if now != was and pair != merged:
                # (x, new) and (x, a) hold a prev_token x; (new, y) and (b, y) a next_token y.
                prev_side = pair[1] == new or (pair[0] != new and pair[1] == a and pair[0] in prev_pos)
                changes.append(PairChange(pair, was, now, "prev" if prev_side else "next"))
        return MergeStep(
            index=len(self.merge_pairs),
            pair=merged,
            new_id=new,
            token=vocab[new],
            count=count,
            changes=changes,
            pushes=pushes,
            parked=parked_now,
        )


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
