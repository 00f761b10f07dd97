"""Classic word-level BPE (seed lectures 004 and 002): symbols are strings, words end in ``</w>``.

The corpus is cut into words (at whitespace, ``text.split()``, as seed 004 does; or into
runs of word characters and single punctuation marks, ``\\w+|[^\\w\\s]``, as seed 002 does),
each distinct word is split into its characters followed by the end-of-word marker ``</w>``,
and the vocabulary starts as the sorted set of those symbols. Each merge joins the most
frequent adjacent pair of symbols into their concatenation, everywhere, left to right.
A symbol *is* its string, as in the notes' code. So a text that holds ``</w>`` itself can
spell a string twice: ``a + </w>`` (the marker) and ``a</w + >`` (the characters) both make
``a</w>``, one symbol; the second merge adds no string to the vocabulary. (Without the
marker in the text this never happens: how a stretch of a word is cut depends only on its
own characters and the merges so far.)

Ties go to the pair seen first: the one whose first occurrence comes earliest, reading the
words in the order they first appear in the corpus and each word left to right. That is
what the notes' ``max(pairs, key=pairs.get)`` over a freshly counted dict picks.

``ClassicTrainer`` keeps the same data structures as the byte-level ``Trainer`` (token
positions with ``prev``/``next`` links, ``pair_positions``, ``pair_counter``, a lazy
max-heap), in Python, and reports each merge as the same ``MergeStep`` record. The heap is
ordered by (count, first occurrence): a merge can lower a pair's count or move its first
occurrence later, and such entries stay put until popped (stale pops). A pair that gains
count (a new pair, or one holding a string spelled again) is pushed again, and its older
entry is skipped when it surfaces. ``engine.train.classic_reference`` is the plain version to
read first.
"""

from __future__ import annotations

import heapq
import json
import os
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path

from engine.corpus.counting import Progress
from engine.corpus.words import count_file_words, count_words, merge_symbols
from engine.encode.token_ids import as_id
from engine.errors import ModelFileError, SettingsError, unreadable
from engine.formats.atomic import atomic_write, make_dir
from engine.train.events import MergeStep, Pair, Token
from engine.train.trainer import TIE_LIMIT, Word, gc_paused

END_OF_WORD = "</w>"
"""The marker appended to every word: ``t</w>`` ends a word, ``t`` does not."""

MODEL_FILE = "classic_bpe.json"
MODEL_TYPE = "classic-bpe"

_Key = tuple[int, int]
"""A heap key: (-count, first position); smaller wins."""


def symbols(word: str, end_of_word: str | None = END_OF_WORD) -> list[str]:
    """A word's starting symbols: its characters, then the end-of-word marker."""
    return list(word) + ([end_of_word] if end_of_word else [])


def alphabet(word_counts: Iterable[str], end_of_word: str | None = END_OF_WORD) -> list[str]:
    """The starting vocabulary: every symbol of every word, sorted (``</w>`` included)."""
    return sorted({s for word in word_counts for s in symbols(word, end_of_word)})


def merges_for(vocab_size: int, base: list[str]) -> int:
    """Merges planned to reach ``vocab_size`` from the alphabet ``base``; ``SettingsError``
    when the alphabet alone is already larger."""
    if vocab_size < len(base):
        raise SettingsError(f"vocab size {vocab_size} is below the {len(base):,} symbols this corpus starts with")
    return vocab_size - len(base)


class ClassicTrainer:
    """Classic BPE training, one merge at a time. Ids index ``vocab``: the alphabet, then
    each new string in the order merges made it."""

    size_unit = "chars"
    """What ``corpus_size`` counts: the characters of the words (whitespace is not kept)."""
    tie_break = "first seen wins"
    summary = None
    """What was read, as byte-level training reports it from its shards: classic BPE reads
    one file itself, so there is none."""

    def __init__(
        self,
        word_counts: Mapping[str, int],
        vocab_size: int,
        end_of_word: str | None = END_OF_WORD,
        split: str = "whitespace",
        progress: Progress | None = None,
    ) -> None:
        self._word_counts = dict(word_counts)  # laid out in this (first-seen) order
        self.end_of_word = end_of_word
        self.split = split
        """How the words were cut, kept for the saved model."""
        self.vocab_size = vocab_size
        self.merges_planned = merges_for(vocab_size, alphabet(self._word_counts, end_of_word))
        self.progress = progress
        self.stop_requested = False
        """Set (from a signal handler or another thread) to end ``run()`` at a merge boundary."""
        self._ranked: list[tuple[int, int, str]] | None = None
        self._build()

    @classmethod
    def from_text(cls, text: str, vocab_size: int, split: str = "whitespace", **kwargs: object) -> ClassicTrainer:
        return cls(count_words([text], split), vocab_size, split=split, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        vocab_size: int,
        split: str = "whitespace",
        progress: Progress | None = None,
        errors: str = "strict",
        **kwargs: object,
    ) -> ClassicTrainer:
        counts = count_file_words(path, split, progress, errors)
        return cls(counts, vocab_size, split=split, progress=progress, **kwargs)  # type: ignore[arg-type]

    # -- the state before any merge -------------------------------------------------------

    def _build(self) -> None:
        self.vocab = alphabet(self._word_counts, self.end_of_word)
        self.alphabet_size = len(self.vocab)
        self._ids = {s: i for i, s in enumerate(self.vocab)}
        self.merge_pairs: list[Pair] = []
        self.merge_ids: list[int] = []
        """The id each merge made (an existing one when its string was already there)."""
        self.merge_counts: list[int] = []
        self.stopped_early = False
        self._tokens: list[int] = []  # the symbol at each position; -1 once merged into its left
        self._weight: list[int] = []
        self._starts: list[int] = []
        self._counter: dict[Pair, int] = {}
        self._positions: dict[Pair, list[int]] = {}
        self.corpus_size = 0
        for word, count in self._word_counts.items():
            self._starts.append(len(self._tokens))
            self.corpus_size += len(word) * count
            ids = [self._ids[s] for s in symbols(word, self.end_of_word)]
            for i, token in enumerate(ids):
                if i:
                    pair = (ids[i - 1], token)
                    self._counter[pair] = self._counter.get(pair, 0) + count
                    self._positions.setdefault(pair, []).append(len(self._tokens) - 1)
                self._tokens.append(token)
                self._weight.append(count)
        n = len(self._tokens)
        starts = set(self._starts)
        self._prev = [-1 if p in starts else p - 1 for p in range(n)]
        self._next = [-1 if p + 1 in starts or p + 1 == n else p + 1 for p in range(n)]
        self.tokens_in_corpus = sum(self._weight)
        self.stored_positions = n - len(self._starts)
        self._first = {pair: ps[0] for pair, ps in self._positions.items()}
        self._queued: dict[Pair, _Key] = {pair: (-c, self._first[pair]) for pair, c in self._counter.items()}
        self._heap = [(key, pair) for pair, key in self._queued.items()]
        heapq.heapify(self._heap)

    # -- state the app reads --------------------------------------------------------------

    @property
    def merges(self) -> list[tuple[str, str]]:
        v = self.vocab
        return [(v[a], v[b]) for a, b in self.merge_pairs]

    @property
    def merges_done(self) -> int:
        return len(self.merge_pairs)

    @property
    def finished(self) -> bool:
        return self.stopped_early or self.merges_done >= self.merges_planned

    def token(self, token_id: int) -> str:
        """The token of ``token_id`` in the vocabulary as it is now; ``TokenIdError`` names an
        id that is none."""
        return self.vocab[as_id(token_id, len(self.vocab) - 1)]

    @property
    def pair_counter(self) -> dict[Pair, int]:
        """A copy of every live pair's count."""
        return dict(self._counter)

    @property
    def pair_count(self) -> int:
        return len(self._counter)

    @property
    def heap_size(self) -> int:
        return len(self._heap)

    def top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` pairs that would win next, in order, with their counts (a pure query)."""
        first = self._first
        return heapq.nsmallest(k, self._counter.items(), key=lambda pc: (-pc[1], first[pc[0]]))

    def words(self, k: int) -> list[Word]:
        """The ``k`` most frequent words (first seen first on a draw), segmented now."""
        if self._ranked is None:  # sorted once, when first shown: a plain run never needs it
            self._ranked = sorted((-c, i, w) for i, (w, c) in enumerate(self._word_counts.items()))
        out = []
        for c, i, text in self._ranked[:k]:
            parts: list[Token] = []
            p = self._starts[i]
            while p != -1:
                parts.append(self.vocab[self._tokens[p]])
                p = self._next[p]
            out.append(Word(text, -c, parts))
        return out

    # -- training -------------------------------------------------------------------------

    def step(self) -> MergeStep | None:
        """Perform exactly one merge and return its full record (``None`` when done)."""
        if self.merges_done >= self.merges_planned:
            return None
        return self._merge(record=True)

    def run(self, until: int | None = None) -> None:
        """Merge until ``until`` merges are done (default: all planned), or a stop request."""
        target = self.merges_planned if until is None else min(until, self.merges_planned)
        with gc_paused():
            while self.merges_done < target and not self.stop_requested:
                self._merge(record=False)
                if self.stopped_early:
                    break
                if self.progress is not None and self.merges_done % 256 == 0:
                    self.progress("merge", self.merges_done, self.merges_planned)
        if self.progress is not None:
            self.progress("merge", self.merges_done, self.merges_planned)

    def goto(self, k: int) -> None:
        """Move to the state after ``k`` merges (back: rebuild and merge again, which picks
        the same pairs: training is deterministic)."""
        if k < self.merges_done:
            self._build()
        self.run(until=k)

    def _merge(self, record: bool) -> MergeStep | None:
        """Pop the winner, merge it everywhere, update the counts and the heap. Returns the
        step's record when ``record`` (``run`` records nothing); sets ``stopped_early`` when
        no pair is left."""
        stale: list[int] = []
        pushes: list[int] = []
        winner = self._select(stale, pushes)
        if winner is None:
            self.stopped_early = True
            return None
        pair, count = winner
        ties = self._ties(pair, count) if record else []
        text = self.vocab[pair[0]] + self.vocab[pair[1]]
        new = self._ids.get(text)
        if new is None:  # else a string made before by another route: the same symbol
            new = self._ids[text] = len(self.vocab)
            self.vocab.append(text)
        before, side, lost_first = self._replace(pair, new)
        changes: list[int] = []
        for p, was in before.items():
            now = self._counter[p]
            if now != was:
                changes += (*p, was, now, side[p])
            if now == 0:
                self._drop(p)
                continue
            if p in lost_first:
                self._refind_first(p)
            key = (-now, self._first[p])
            queued = self._queued.get(p)
            if queued is None or key < queued:  # new, or risen: the heap must hear of it
                heapq.heappush(self._heap, (key, p))
                self._queued[p] = key
                pushes += (*p, now)
        self.merge_pairs.append(pair)
        self.merge_ids.append(new)
        self.merge_counts.append(count)
        self.tokens_in_corpus -= count
        if not record:
            return None
        return MergeStep(
            self.merges_done,
            pair,
            new,
            text,
            count,
            ties,
            array("q", changes).tobytes(),
            array("q", pushes).tobytes(),
            array("q", stale).tobytes(),
            len(self._heap),
            len(self._counter),
        )

    def _select(self, stale: list[int], pushes: list[int]) -> tuple[Pair, int] | None:
        """Pop the heap until its top is current: the winner and its count (None: no pairs).

        A stale top (its count fell, or its first occurrence moved on) is re-pushed with the
        pair's key now, or dropped at zero; both are noted as packed rows."""
        heap, queued = self._heap, self._queued
        while heap:
            key, pair = heap[0]
            if queued.get(pair) != key:  # an older entry of a pair pushed again since
                heapq.heappop(heap)
                continue
            count = self._counter.get(pair, 0)
            now = (-count, self._first[pair]) if count else None
            if key == now:
                heapq.heappop(heap)
                del queued[pair]
                return pair, count
            stale += (*pair, -key[0], count)
            if now is None:
                heapq.heappop(heap)
                del queued[pair]
            else:
                heapq.heapreplace(heap, (now, pair))
                queued[pair] = now
                pushes += (*pair, count)
        return None

    def _ties(self, pair: Pair, count: int) -> list[Pair]:
        """The other pairs at ``count`` that ``pair`` beat, first seen first."""
        tied = [p for p, c in self._counter.items() if c == count and p != pair]
        return heapq.nsmallest(TIE_LIMIT, tied, key=self._first.__getitem__)

    def _replace(self, pair: Pair, new: int) -> tuple[dict[Pair, int], dict[Pair, int], set[Pair]]:
        """Merge every occurrence of ``pair`` into ``new``, left to right, and apply the
        pair-count changes. Returns the counts before the step of the pairs it touched,
        the side each was first touched on (0: prev_token, 1: next_token), and the pairs
        that lost their first occurrence."""
        a, b = pair
        tokens, prev, nxt, weight = self._tokens, self._prev, self._next, self._weight
        counter, positions, first = self._counter, self._positions, self._first
        places = positions.pop(pair)
        self.stored_positions -= len(places)
        del counter[pair], first[pair]
        if a == b:
            places.sort()  # a a a: the leftmost pair merges, the next one is gone
        before: dict[Pair, int] = {}
        side: dict[Pair, int] = {}
        lost_first: set[Pair] = set()

        def change(p: Pair, delta: int, where: int, at: int) -> None:
            if p == pair:  # (a, a) is also lost by its own merge: it is gone already
                return
            if p not in before:
                before[p] = counter.get(p, 0)
                side[p] = where
            counter[p] = counter.get(p, 0) + delta  # a pair made now can go again in this step: a b a b
            if delta > 0:
                positions.setdefault(p, []).append(at)
                self.stored_positions += 1
                if at < first.get(p, at + 1):
                    first[p] = at
            elif first.get(p) == at:
                lost_first.add(p)

        for p in places:
            q = nxt[p]
            if tokens[p] != a or q == -1 or tokens[q] != b:
                continue  # merged away since this position was stored
            w = weight[p]
            o, r = prev[p], nxt[q]
            if o != -1:
                change((tokens[o], a), -w, 0, o)
                change((tokens[o], new), w, 0, o)
            if r != -1:
                change((b, tokens[r]), -w, 1, q)
                change((new, tokens[r]), w, 1, p)
                prev[r] = p
            tokens[p], tokens[q], nxt[p] = new, -1, r
        return before, side, lost_first

    def _pair_at(self, p: int) -> Pair | None:
        q = self._next[p]
        return None if self._tokens[p] == -1 or q == -1 else (self._tokens[p], self._tokens[q])

    def _refind_first(self, p: Pair) -> None:
        """Find the first occurrence of ``p`` again, dropping its merged-away positions."""
        live = [q for q in self._positions[p] if self._pair_at(q) == p]
        self.stored_positions -= len(self._positions[p]) - len(live)
        self._positions[p] = live
        self._first[p] = min(live)

    def _drop(self, p: Pair) -> None:
        """Forget a pair whose count reached zero (its heap entry is dropped when popped)."""
        del self._counter[p]
        self.stored_positions -= len(self._positions.pop(p, ()))
        self._first.pop(p, None)

    # -- the trained model ----------------------------------------------------------------

    def model(self) -> ClassicModel:
        return ClassicModel(list(self.vocab), self.merges, self.end_of_word, self.split)


class ClassicModel:
    """A trained classic BPE: its vocabulary and merges, saved as one JSON file::

        {"type": "classic-bpe", "end_of_word": "</w>", "split": "whitespace",
         "vocab": ["</w>", "d", "e", ...], "merges": [["e", "s"], ["es", "t"], ...]}

    ``vocab`` lists the strings in id order; ``merges`` in the order they were learned.
    """

    def __init__(
        self, vocab: list[str], merges: list[tuple[str, str]], end_of_word: str | None = END_OF_WORD, split: str = "whitespace"
    ) -> None:
        self.vocab, self.merges, self.end_of_word, self.split = vocab, merges, end_of_word, split

    def segment(self, word: str) -> list[str]:
        """Split ``word`` as seed 004 applies a model: every merge in order, each everywhere."""
        parts = tuple(symbols(word, self.end_of_word))
        for a, b in self.merges:
            parts = merge_symbols(parts, a, b, a + b)
        return list(parts)

    def to_json(self) -> str:
        data = {
            "type": MODEL_TYPE,
            "end_of_word": self.end_of_word,
            "split": self.split,
            "vocab": self.vocab,
            "merges": [list(m) for m in self.merges],
        }
        return json.dumps(data, ensure_ascii=False, indent=1) + "\n"

    def files(self) -> dict[str, str]:
        """What ``save`` writes, by file name."""
        return {MODEL_FILE: self.to_json()}

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``directory/classic_bpe.json`` atomically (the directory is made if needed)."""
        return atomic_write(make_dir(directory) / MODEL_FILE, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ClassicModel:
        """Read a saved model (a ``classic_bpe.json`` or the directory holding it)."""
        path = Path(path)
        if path.is_dir():
            path = path / MODEL_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ModelFileError(unreadable(path, e)) from None
        except ValueError as e:  # not UTF-8, or not JSON
            raise ModelFileError(f"{path}: not a classic BPE model ({e})") from None
        try:
            if data["type"] != MODEL_TYPE:
                raise ValueError(f"type is {data['type']!r}")
            merges = [(str(a), str(b)) for a, b in data["merges"]]
            return cls([str(s) for s in data["vocab"]], merges, data["end_of_word"], data["split"])
        except (KeyError, TypeError, ValueError) as e:
            raise ModelFileError(f"{path}: not a classic BPE model ({e!r})") from None
