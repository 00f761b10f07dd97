"""The optimized, steppable BPE trainer (seed lecture 000, PART 3).

Every distinct pre-token ("word") is laid out once, each byte at a token position with
``prev``/``next`` links and the word's count as its weight; a separator token between words
marks their edges.

- ``pair_positions``: pair -> positions where it starts; append-only, each position is
  checked when used (it may have been merged away since). A long list that is mostly such
  stale positions is compacted (see ``compact`` in the core).
- ``pair_counter``: pair -> weighted count.
- a lazy max-heap of ``(count, pair)``: a merge only *lowers* the counts of existing pairs,
  so those entries are left in place and corrected when they reach the top (stale pops).
  Only new pairs, which contain the new token, are pushed.

Merging a pair visits only its positions: for each, the token before (prev_token) and after
(next_token) lose a pair with the old token and gain one with the new token. Those deltas
are applied to ``pair_counter`` at once; they are also the ``changes`` of the step's
``MergeStep``.

Ties go to the lexicographically greater pair of byte strings: the heap compares the
tokens' bytes when counts are equal, so its top is the exact winner.

This state and the merge loop live in the compiled ``engine.train._trainer_core`` (the loop runs
once per occurrence of every merged pair: too hot for the interpreter), which also keeps
the words as they were given, so the counts they came in can be freed once it is built,
and the vocabulary. ``Trainer`` keeps the merge list (flat arrays of ids and counts, not
Python objects per merge) and turns the core's records into events; ``engine.train.reference``
is the plain version to read first.
"""

from __future__ import annotations

import gc
import math
import os
import shutil
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.corpus.counting import CountSummary, Progress, check_counted, count_iterable, count_parts, count_table
from engine.corpus.counts_file import CountsStream, SavedCounts, kept_counts_folder, load_counts, open_counts, saved_sizes
from engine.corpus.counts_file import save_counts as save_counts_file
from engine.corpus.pretokenize import PreTokenizer, pattern_name
from engine.corpus.shards import CountSettings, keep_mmap_threshold
from engine.corpus.word_table import TableParts, WordTable
from engine.encode.token_ids import as_id
from engine.errors import CorpusError, SettingsError, counted
from engine.train._trainer_core import Core
from engine.train.events import MergeStep, Pair, Token
from engine.train.occurrences import Cell, Occurrence, PairOccurrences, WordCells

TIE_LIMIT = 5
"""How many tied pairs a ``MergeStep`` lists."""

RUN_SLICE = 256
"""Merges per call into the core during ``run()``: how often progress and stop requests
are looked at."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: code that makes many small containers and no
    cycles only loses time to collections."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def first_merge_id(special_tokens: Sequence[str]) -> int:
    """The id of the first merge: after the 256 bytes and the special tokens."""
    return 256 + len(special_tokens)


def check_settings(vocab_size: int, special_tokens: Sequence[str]) -> None:
    """Raise ``SettingsError`` for settings that cannot produce a tokenizer."""
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise SettingsError(f"vocab size is a whole number, not {type(vocab_size).__name__} {vocab_size!r}")
    if isinstance(special_tokens, str):  # its letters would each be taken for a token
        raise SettingsError(f"special tokens are a list of strings, not one string: give [{special_tokens!r}]")
    if not all(isinstance(s, str) for s in special_tokens):
        wrong = next(s for s in special_tokens if not isinstance(s, str))
        raise SettingsError(f"special tokens are strings, not {type(wrong).__name__} {wrong!r}")
    if any(not s for s in special_tokens):
        raise SettingsError("special tokens must not be empty")
    dupes = sorted({s for s in special_tokens if special_tokens.count(s) > 1})
    if dupes:
        raise SettingsError(f"duplicate special token: {dupes[0]!r}")
    floor = first_merge_id(special_tokens)
    if vocab_size < floor:
        raise SettingsError(f"vocab size {vocab_size} is below {floor} (256 bytes + {counted(len(special_tokens), 'special token')})")


def count_corpus(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    settings: CountSettings,
    workers: int | None = None,
    progress: Progress | None = None,
    dask: object = None,
    keep: str | os.PathLike[str] | None = None,
    max_memory: int | None = None,
) -> tuple[WordTable, CountSummary]:
    """The pre-token counts a trainer starts from (packed: see ``count_table``), and what was
    read; ``CorpusError`` if there is nothing to train on. ``dask``: count on a Dask cluster
    (see ``engine.corpus.dask_count``); ``keep`` and ``max_memory``: see ``count_table``."""
    table, summary = count_table(inputs, settings, workers=workers, progress=progress, dask=dask, keep=keep, max_memory=max_memory)
    check_counted(table, summary)
    return table, summary


def load_saved_counts(path: str | os.PathLike[str], pattern: str, special_tokens: Sequence[str]) -> SavedCounts:
    """Counts saved by ``--save-counts``; ``CorpusError`` if they were made with another
    pattern or other special tokens."""
    return check_counted_with(path, load_counts(path), pattern, special_tokens)


def open_saved_counts(path: str | os.PathLike[str], pattern: str, special_tokens: Sequence[str]) -> CountsStream:
    """Counts saved by ``--save-counts``, to be read a part at a time; ``CorpusError`` if they
    were made with another pattern or other special tokens (said from the file's header)."""
    return check_counted_with(path, open_counts(path), pattern, special_tokens)


Saved = TypeVar("Saved", SavedCounts, CountsStream)


def check_counted_with(path: str | os.PathLike[str], saved: Saved, pattern: str, special_tokens: Sequence[str]) -> Saved:
    """``saved``, if it was counted with ``pattern`` and ``special_tokens``; else ``CorpusError``."""
    wanted = PreTokenizer(pattern, special_tokens)
    if saved.pattern != wanted.pattern:
        name = pattern_name(saved.pattern) or "a custom pattern"  # a damaged file's may not compile
        raise CorpusError(
            f"{path}: counted with --pattern {name}, not {wanted.pattern_name or 'this pattern'}: "
            "train with the settings they were counted with, or count again"
        )
    if saved.special_tokens != wanted.special_tokens:
        raise CorpusError(
            f"{path}: counted with special tokens {list(saved.special_tokens)}, not {list(wanted.special_tokens)}: "
            "train with the settings they were counted with, or count again"
        )
    return saved


@dataclass(frozen=True, slots=True)
class Word:
    """A distinct pre-token, its corpus count and its current segmentation."""

    text: Token
    count: int
    parts: list[Token]


class MergePairs(Sequence[Pair]):
    """The pairs merged so far, as ``(left, right)`` ids, kept in one flat int32 array."""

    def __init__(self) -> None:
        self.ids = array("i")

    def __len__(self) -> int:
        return len(self.ids) // 2

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        i = range(len(self))[index]
        return self.ids[2 * i], self.ids[2 * i + 1]

    def append(self, pair: Pair) -> None:
        self.ids.extend(pair)


LAYOUT_LIMIT = 2**31 - 1
"""The most distinct pre-tokens the core lays out (its words are numbered in 32 bits; its
positions are 64-bit, so their bytes are bounded by memory alone)."""


def check_layout(pretokens: int) -> None:
    """``CorpusError`` if ``pretokens`` distinct pre-tokens are more than the core lays out."""
    if pretokens > LAYOUT_LIMIT:
        raise CorpusError(
            f"{pretokens:,} distinct pre-tokens: more than the merge loop lays out ({LAYOUT_LIMIT:,}); train on a part of the corpus"
        )


FLOOR_FROM = 256
"""Merges a plain run makes before it chooses a floor (``run_floor``)."""


def run_floor(counts: Sequence[int], target: int) -> int:
    """The floor of a plain run's next merges (``Core.run``): a count below which a pair made
    now will not be one of the merges up to ``target`` (the last planned: a run that stops
    sooner keeps a floor the rest can use), as far as the merges so far tell.

    Merge counts fall as a power of the merge's number (about -1.2 on English and on
    ``benchmarks/synth_corpus.py``), so the last one's count is extrapolated from the last
    doubling's slope, made steeper by a quarter, and the floor is a quarter of it. Most pairs
    a merge makes fall below it. A guess that proves too high costs a recount, never a
    different merge.
    """
    k = len(counts)
    if k < FLOOR_FROM or target <= k:
        return 0
    now, half = counts[k - 1], counts[k // 2 - 1]
    slope = math.log(half / now) / math.log(k / (k // 2))
    return int(now * (k / target) ** (1.25 * slope + 0.25) / 4)


RUN_RESERVE = 96 << 20
"""What a plain run holds besides its layout and its lists, which ``bound_memory`` leaves
room for (with a 32nd of the layout more: there are more pairs in a larger corpus): the
interpreter, the pair records, their hash table and the heap, the vocabulary."""

MIN_POSITIONS = 16 << 20
"""The least room ``bound_memory`` leaves the pair_positions lists."""

LAYOUT = ("tokens", "token marks", "large word counts", "word starts")
"""The parts of ``Trainer.memory()`` that are the words laid out: their size is the corpus's."""


class Trainer:
    """Byte-level BPE training, one merge at a time.

    Ids 0-255 are the bytes, then the special tokens in order, then the merges in order.
    """

    size_unit = "bytes"
    """What ``corpus_size`` counts."""
    tie_break = "greater bytes win"
    _core: Core
    """The compiled state, laid out by ``_build``."""

    def __init__(
        self,
        word_counts: Mapping[bytes, int] | WordTable | Iterable[WordTable],
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        progress: Progress | None = None,
        pattern: str = "gpt2",
        summary: CountSummary | None = None,
    ) -> None:
        check_settings(vocab_size, special_tokens)
        self.pattern = pattern
        """The pre-tokenizer the counts came from, kept for the tokenizer made from them."""
        self.summary = summary
        """What the counts were made from, when they came from files."""
        self.special_tokens = tuple(special_tokens)
        self.vocab_size = vocab_size
        self.progress = progress
        self.stop_requested = False
        """Set (from a signal handler or another thread) to end ``run()`` at a merge boundary."""
        self.positions_budget = 0
        """Bytes a plain run's pair_positions lists may hold (0: no bound; see ``bound_memory``)."""
        self._ranked: list[tuple[int, bytes, int]] | None = None
        if isinstance(word_counts, WordTable):
            self._build([word_counts])  # laid out in this order, then held by the core
        elif isinstance(word_counts, Mapping):
            self._build([WordTable.from_counts(word_counts)])
        else:
            self._build(word_counts)  # a part at a time: each let go once laid out

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
    def from_files(
        cls,
        inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        workers: int | None = None,
        progress: Progress | None = None,
        errors: str = "strict",
        text_field: str = "text",
        skip_bad_records: bool = False,
        save_counts: str | os.PathLike[str] | None = None,
        dask: object = None,
        skip_bad_inputs: bool = False,
        stdin_format: str = "text",
        max_memory: int | None = None,
    ) -> Trainer:
        """Train on files, directories, glob patterns and streams (plain text, JSONL, Parquet,
        gzip or zstd compressed; ``-`` is standard input, read as ``stdin_format``: see
        ``engine.corpus.sources``), counted by ``workers`` processes, or on a Dask cluster
        (``dask``: ``"local[:N]"``, a scheduler address or a ``distributed.Client``; see
        ``engine.corpus.dask_count``); with ``save_counts``, the counts are also saved there
        (``engine.corpus.counts_file``), and kept as they are counted in ``SAVE_COUNTS.parts``
        (``engine.corpus.runs``): a count stopped there goes on from the shards it had
        finished when it is asked again; the folder goes once the file is saved.
        ``max_memory``: the bytes counting's tallies may hold together, past which they spill
        to disk (into that folder, or a temporary one).

        ``CorpusError`` if they cannot be read or hold no text besides special tokens; with
        ``skip_bad_inputs``, bad files a directory or pattern turns up are skipped instead, and
        listed in ``summary.skipped_inputs``.
        """
        check_settings(vocab_size, special_tokens)
        settings = CountSettings(pattern, tuple(special_tokens), text_field, errors, skip_bad_records, skip_bad_inputs, stdin_format)
        if save_counts is None:  # laid out a part at a time: the runs as they are joined, or each worker's part
            parts, summary = count_parts(inputs, settings, workers, progress, dask=dask, max_memory=max_memory)
            return cls(parts, vocab_size, special_tokens, progress=progress, pattern=pattern, summary=summary)
        keep = None if save_counts is None else kept_counts_folder(save_counts)
        words, summary = count_corpus(inputs, settings, workers, progress, dask, keep, max_memory)
        if save_counts is not None:
            save_counts_file(save_counts, words, settings.pretokenizer, summary)
            shutil.rmtree(kept_counts_folder(save_counts), ignore_errors=True)
        return cls(words, vocab_size, special_tokens, progress=progress, pattern=pattern, summary=summary)

    from_file = from_files

    @classmethod
    def from_iterator(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        progress: Progress | None = None,
    ) -> Trainer:
        """Train on any iterable of strings (a list, a generator, a dataset's column), each
        string a document: no pre-token spans two of them."""
        check_settings(vocab_size, special_tokens)
        counts = count_iterable(texts, PreTokenizer(pattern, special_tokens))
        return cls(counts, vocab_size, special_tokens, progress=progress, pattern=pattern)

    @classmethod
    def from_counts_file(
        cls,
        path: str | os.PathLike[str],
        vocab_size: int,
        special_tokens: Sequence[str] = (),
        pattern: str = "gpt2",
        progress: Progress | None = None,
    ) -> Trainer:
        """Train on counts saved by ``engine.corpus.counts_file.save_counts`` (``--save-counts``).

        ``CorpusError`` if they were made with another pattern or other special tokens, or
        hold more than the core lays out (said from the file's header, before it is read).
        """
        check_settings(vocab_size, special_tokens)
        if sizes := saved_sizes(path):
            check_layout(sizes[0])
        saved = open_saved_counts(path, pattern, special_tokens)
        return cls(saved.tables, vocab_size, special_tokens, progress=progress, pattern=pattern, summary=saved.summary)

    def _build(self, tables: Iterable[WordTable] | None = None) -> None:
        """Lay out the words of ``tables``, in order (by default the core's, as they were
        given), and queue their pairs: the state before any merge."""
        base = [bytes([i]) for i in range(256)] + [s.encode("utf-8") for s in self.special_tokens]
        given = [WordTable.packed(*self._core.table())] if tables is None else tables
        keep_mmap_threshold()  # the core's large arrays get mappings of their own (counts from a file skip count_table)
        self._core = Core(b"", array("q"), array("q"), base)
        if isinstance(given, TableParts):  # room for them all at once, before the first is laid out
            self._core.reserve(given.words, given.words_bytes)
        elif isinstance(given, Sequence):
            self._core.reserve(sum(len(part) for part in given), sum(len(part.words) for part in given))
        for part in given:
            check_layout(self._core.words + len(part))
            self._core.extend(part.words, part.ends, part.counts)
        self._first_merge_id = first_merge_id(self.special_tokens)
        self.merge_pairs = MergePairs()
        self.merge_counts = array("q")
        """The count of each merge's pair when it won."""
        self.stopped_early = False
        self.corpus_bytes = self._core.corpus_bytes
        self.tokens_in_corpus = self.corpus_bytes

    def bound_memory(self, max_memory: int) -> None:
        """Keep a plain run within about ``max_memory`` bytes: the words laid out take what
        they take, and the pair_positions lists get what is left past them and
        ``RUN_RESERVE``; the other pairs are kept as counts, their positions found again
        when one is to be merged (the merges stay exact). ``SettingsError`` if that leaves
        less than ``MIN_POSITIONS``."""
        layout = sum(self.memory()[part] for part in LAYOUT)
        reserve = RUN_RESERVE + layout // 32
        budget = max_memory - layout - reserve
        if budget < MIN_POSITIONS:
            least = (layout + reserve + MIN_POSITIONS + (1 << 20) - 1) >> 20
            raise SettingsError(
                f"a memory bound of {max_memory:,} bytes is too little to train in: the words laid out take {layout:,} bytes; "
                f"give at least {least:,} MB"
            )
        self.positions_budget = budget

    def memory_by_part(self) -> dict[str, int]:
        """``memory()`` in three: the words laid out (as large as the corpus's distinct
        pre-tokens), the pair_positions lists (what ``bound_memory`` bounds), and the rest
        (the pairs' records, hash table and heap, and the vocabulary)."""
        memory = self.memory()
        layout = sum(memory[part] for part in LAYOUT)
        positions = memory["pair_positions arrays"]
        return {"words laid out": layout, "pair positions": positions, "pairs and tokens": sum(memory.values()) - layout - positions}

    @property
    def positions_found_again(self) -> int:
        """Passes over the layout that found the positions of pairs kept as counts
        (``bound_memory``): 0 without a bound."""
        return self._core.relists

    # -- state the app reads ------------------------------------------------------------

    @property
    def vocab(self) -> dict[int, bytes]:
        token = self._core.token
        return {i: token(i) for i in range(self._first_merge_id + len(self.merge_pairs))}

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        token = self._core.token
        return [(token(a), token(b)) for a, b in self.merge_pairs]

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
        """The bytes of token ``token_id`` in the vocabulary as it is now; ``TokenIdError``
        names an id that is none (a merge's gone back over, say)."""
        return self._core.token(as_id(token_id, self._first_merge_id + len(self.merge_pairs) - 1))

    token = token_bytes
    """The name every steppable trainer gives it (``ClassicTrainer.token`` is a string)."""

    @property
    def corpus_size(self) -> int:
        return self.corpus_bytes

    @property
    def merge_ids(self) -> range:
        """The id each merge made: one new id per merge, in order."""
        return range(self._first_merge_id, self._first_merge_id + len(self.merge_pairs))

    @property
    def pair_counter(self) -> dict[Pair, int]:
        """A copy of every live pair's count."""
        return self._core.pair_counter()

    @property
    def pair_count(self) -> int:
        """The number of live pairs (the size of ``pair_counter``)."""
        return self._core.live_pairs

    @property
    def stored_positions(self) -> int:
        """Positions held in the ``pair_positions`` lists of live pairs (some merged away)."""
        return self._core.stored_positions

    @property
    def heap_size(self) -> int:
        return self._core.heap_size

    def memory(self) -> dict[str, int]:
        """Bytes each structure of the merge loop's state has allocated: the layout's tokens,
        the words' counts and starts, the vocabulary, the pair records, their
        ``pair_positions`` arrays, the hash table and the heap."""
        return self._core.memory()

    def top_pairs(self, k: int) -> list[tuple[Pair, int]]:
        """The ``k`` pairs that would win next, in order, with their counts (a pure query)."""
        return self._core.top_pairs(k)

    def words(self, k: int) -> list[Word]:
        """The ``k`` most frequent words with their current segmentation."""
        if self._ranked is None:  # sorted once, when first shown: a plain run never needs it
            core = self._core
            self._ranked = sorted((-c, w, i) for i in range(core.words) for w, c in (core.word(i),))
        core = self._core
        return [Word(w, -c, [core.token(t) for t in core.segmentation(i)]) for c, w, i in self._ranked[:k]]

    def word_table(self) -> WordTable:
        """The pre-tokens and their counts as given (a copy: the trainer's own are in its core)."""
        data, ends, counts = self._core.table()
        return WordTable(data, array("q", ends), array("q", counts))

    def word_cells(self, index: int) -> WordCells:
        """Word ``index`` (its place in the word counts the trainer was given) as laid out
        now: its cells, their tokens and links."""
        cells = tuple(Cell(p, t, None if a < 0 else a, None if b < 0 else b) for p, t, a, b in self._core.cells(index))
        return WordCells(index, *self._core.word(index), cells)

    def pair_occurrences(self, pair: Pair, limit: int) -> PairOccurrences:
        """Where ``pair`` is recorded in ``pair_positions``: the counts of its live and stale
        positions, and the first ``limit`` of them with the words they lie in (a pure query)."""
        recorded, live, found = self._core.pair_positions(pair[0], pair[1], limit)
        occurrences = tuple(Occurrence(*row) for row in found)
        words = {i: self.word_cells(i) for i in dict.fromkeys(o.word for o in occurrences)}
        return PairOccurrences(pair, recorded, live, occurrences, words)

    # -- training -----------------------------------------------------------------------

    def step(self) -> MergeStep | None:
        """Perform exactly one merge and return its full record (``None`` when done)."""
        if len(self.merge_pairs) >= self.merges_planned:
            return None
        done = self._core.step(TIE_LIMIT)
        if done is None:
            self.stopped_early = True
            return None
        a, b, count = done[:3]
        self._record(a, b, count)
        new_id = self._first_merge_id + len(self.merge_pairs) - 1
        return MergeStep(len(self.merge_pairs), (a, b), new_id, self._core.token(new_id), *done[2:])

    def steps(self, until: int | None = None) -> Iterator[MergeStep]:
        """The detailed stream: merge until ``until`` (default: all planned) or a stop
        request, yielding each merge's record.

        The garbage collector stays paused while the iteration is open: the records are
        many small containers with no cycles.
        """
        target = self.merges_planned if until is None else min(until, self.merges_planned)
        with gc_paused():
            while len(self.merge_pairs) < target and not self.stop_requested:
                record = self.step()
                if record is None:
                    return
                yield record

    def run(self, until: int | None = None) -> None:
        """Merge until ``until`` merges are done (default: all planned), or a stop request."""
        target = self.merges_planned if until is None else min(until, self.merges_planned)
        report = self.progress
        while len(self.merge_pairs) < target and not self.stop_requested:
            want = min(RUN_SLICE, target - len(self.merge_pairs))
            done = self._core.run(want, run_floor(self.merge_counts, self.merges_planned), self.positions_budget)
            for a, b, count in done:
                self._record(a, b, count)
            if len(done) < want:
                self.stopped_early = True
                break
            if report is not None:
                report("merge", len(self.merge_pairs), self.merges_planned)
        if report is not None:
            report("merge", len(self.merge_pairs), self.merges_planned)

    def _record(self, a: int, b: int, count: int) -> None:
        """Note a merge the core has done (and whose token it has added): its pair and count."""
        self.merge_pairs.append((a, b))
        self.merge_counts.append(count)
        self.tokens_in_corpus -= count

    def goto(self, k: int) -> None:
        """Move to the state after ``k`` merges.

        Going back rebuilds the start and redoes the first ``k`` merges, which are known:
        no pair is selected or queued on the way, and the heap is built once at the end.
        """
        if k >= len(self.merge_pairs):
            self.run(until=k)
            return
        redo = self.merge_pairs[:k]
        counts = self.merge_counts[:k]
        self._build()
        self._core.redo(redo)
        for (a, b), count in zip(redo, counts, strict=True):
            self._record(a, b, count)

    def replay(self, merges: Sequence[tuple[bytes, bytes]]) -> bool:
        """Redo saved ``merges``; False if this corpus and settings would choose otherwise.

        They are merged as a run merges, ``RUN_SLICE`` at a time, each slice then checked
        against them: asking for the winning pair before every merge cost a scan of the
        pairs each, 1,000 times a run's time on a corpus of many words. A stop request ends
        it early, the merges redone so far agreeing with the first of them."""
        if self.merge_pairs:
            self._build()
        token = self._core.token
        while len(self.merge_pairs) < len(merges) and not self.stop_requested:
            start = len(self.merge_pairs)
            self.run(until=min(len(merges), start + RUN_SLICE))
            done = self.merge_pairs[start:]
            if not done or [(token(a), token(b)) for a, b in done] != list(merges[start : start + len(done)]):
                return False
        return True


def train_bpe(
    input_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    **options: object,
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train on files; returns ``(vocab, merges)`` (the CS336 ``run_train_bpe`` shape).

    ``input_path``: a file, or a list of files, directories and glob patterns. Options:
    ``pattern`` ("gpt2", "gpt4" or a regex), ``workers`` (processes for counting, default all
    cores), ``progress`` (callback ``(phase, done, total)``), ``errors`` ("strict" or
    "replace" for invalid UTF-8), ``text_field`` (JSONL field or Parquet column, default
    "text"), ``skip_bad_records``, ``dask`` (count on a Dask cluster: ``"local:N"``, a
    scheduler address or a ``distributed.Client``).
    """
    check_settings(vocab_size, special_tokens)  # before list() takes one string letter by letter
    trainer = Trainer.from_files(input_path, vocab_size, list(special_tokens), **options)  # type: ignore[arg-type]
    trainer.run()
    return trainer.vocab, trainer.merges


def train_from_iterator(
    texts: Iterable[str],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    pattern: str = "gpt2",
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train on an iterable of strings, each a document; returns ``(vocab, merges)``."""
    check_settings(vocab_size, special_tokens)  # before list() takes one string letter by letter
    trainer = Trainer.from_iterator(texts, vocab_size, list(special_tokens), pattern=pattern)
    trainer.run()
    return trainer.vocab, trainer.merges
