"""The compiled WordPiece trainer (``engine.train.wordpiece._wordpiece_core`` behind
``WordPieceTrainer``) against the plain one: the same merges, ties and all; each step's
events against the counts before and after it; stepping, running and going back agreeing;
``top_pairs`` in the rule's order and changing nothing; the committed corpora."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.corpus.words import count_file_words, merge_symbols
from engine.train.events import Pair
from engine.train.trainer import TIE_LIMIT
from engine.train.wordpiece.events import WordPieceStep
from engine.train.wordpiece.reference import train_wordpiece_reference
from engine.train.wordpiece.rule import SPECIAL_TOKENS, alphabet, joined, rule_key, symbols
from engine.train.wordpiece.trainer import WordPieceTrainer
from tests.conftest import fixture_file

ALPHABETS = ["ab", "abc", "a#", "ab#", "aé"]
"""A few letters make ties, runs (``##a ##a ##a``) and tokens made twice; ``#`` lets a merge
spell a continuing token from a word's start (``#`` ``###`` is ``##``, and ``##`` ``##a``
is ``##a``: a merge whose new token is its right part)."""
SPECIALS = st.sampled_from([SPECIAL_TOKENS, (), ("a",), ("##a", "[UNK]")])
"""BERT's, none, and special tokens that are also symbols of the words."""
COUNTS = st.integers(1, 5)


@st.composite
def corpora(draw: st.DrawFn, counts: st.SearchStrategy[int] = COUNTS) -> dict[str, int]:
    letters = draw(st.sampled_from(ALPHABETS))
    word = st.text(letters, min_size=1, max_size=1) | st.text(letters, min_size=1, max_size=8)
    return draw(st.dictionaries(word, counts, min_size=1, max_size=10))


def alphabet_size(counts: dict[str, int], specials: tuple[str, ...] = SPECIAL_TOKENS) -> int:
    """The smallest vocabulary size ``rule.base_vocab`` takes: the special tokens and the
    alphabet (a special token that is also a symbol counted twice)."""
    return len(specials) + len(alphabet(counts))


def ranked(trainer: WordPieceTrainer, counter: dict[Pair, int], symbol: list[int]) -> list[Pair]:
    """Every pair of ``counter`` by brute force, best first, under ``rule.rule_key``."""
    v = trainer.vocab
    return sorted(counter, key=lambda p: rule_key(v[p[0]], v[p[1]], counter[p], symbol[p[0]], symbol[p[1]]), reverse=True)


def score(pair: Pair, counter: dict[Pair, int], symbol: list[int]) -> Fraction:
    return Fraction(counter[pair], symbol[pair[0]] * symbol[pair[1]])


def symbol_counts(trainer: WordPieceTrainer) -> list[int]:
    return [trainer.symbol_count(i) for i in range(len(trainer.vocab))]


def recount(trainer: WordPieceTrainer, counts: dict[str, int]) -> tuple[dict[Pair, int], list[int]]:
    """The pair and symbol counts of the words as the trainer has them segmented now."""
    ids = {s: i for i, s in enumerate(trainer.vocab)}
    pairs: Counter[Pair] = Counter()
    symbol = [0] * len(trainer.vocab)
    for word in trainer.words(len(counts)):
        parts = [ids[str(s)] for s in word.parts]
        for s in parts:
            symbol[s] += word.count
        for pair in zip(parts, parts[1:], strict=False):
            pairs[pair] += word.count
    return dict(pairs), symbol


def steps(trainer: WordPieceTrainer) -> list[WordPieceStep]:
    out = []
    while (step := trainer.step()) is not None:
        out.append(step)
    return out


# -- the same merges as the reference ---------------------------------------------------------


@settings(max_examples=300)
@given(counts=corpora(), extra=st.integers(0, 40), specials=SPECIALS)
def test_the_trainer_matches_the_reference(counts, extra, specials):
    size = alphabet_size(counts, specials) + extra
    vocab, merges = train_wordpiece_reference(counts, size, specials)
    trainer = WordPieceTrainer(counts, size, specials)
    trainer.run()
    assert (trainer.merges, trainer.vocab) == (merges, vocab)
    assert trainer.finished and trainer.stopped_early == (len(vocab) < size)
    assert [trainer.token(i) for i in trainer.merge_ids] == [joined(a, b) for a, b in merges]
    segmented = {w: tuple(symbols(w)) for w in counts}
    for a, b in merges:  # the words as the merges split them, left to right
        segmented = {w: merge_symbols(s, a, b, joined(a, b)) for w, s in segmented.items()}
    assert {w.text: tuple(w.parts) for w in trainer.words(len(counts))} == segmented


@settings(max_examples=200)
@given(counts=corpora(st.integers(1, 5).flatmap(lambda c: st.integers(c * 2**50 - 3, c * 2**50 + 3))), extra=st.integers(0, 30))
def test_scores_are_compared_exactly_beyond_double_precision(counts, extra):
    """Counts near multiples of 2^50 give scores whose doubles are equal or one unit apart:
    the order comes from the 192-bit products."""
    size = alphabet_size(counts) + extra
    trainer = WordPieceTrainer(counts, size)
    trainer.run()
    assert (trainer.vocab, trainer.merges) == train_wordpiece_reference(counts, size)


def test_scores_too_close_for_doubles():
    n = 2**53
    counts = {"ab": n + 1, "cd": n, "ef": 3 * n, "eg": 3 * n + 1}
    trainer = WordPieceTrainer(counts, 100, ())
    trainer.run()
    assert trainer.merges == train_wordpiece_reference(counts, 100, ())[1] == [("c", "##d"), ("a", "##b"), ("e", "##g"), ("e", "##f")]


def test_a_merge_can_make_a_token_already_there():
    """``###`` ``###a`` makes ``####a``, and ``#`` ``####a`` makes ``###a`` again (id 3, no new
    id); ``##`` ``###`` makes ``###``, its own right part."""
    trainer = WordPieceTrainer({"###a": 5}, 100, ())
    trainer.run()
    assert trainer.merges == [("###", "##a"), ("###", "###a"), ("#", "####a")] and trainer.merge_ids == [3, 4, 3]
    assert trainer.stopped_early and trainer.vocab == ["#", "###", "##a", "###a", "####a"]
    counts = {"###": 2, "#a": 1, "a##a": 1}
    trainer = WordPieceTrainer(counts, 100, ())
    trainer.run()
    assert trainer.merges[-1] == ("##", "###") and trainer.merge_ids[-1] == 1
    assert (trainer.vocab, trainer.merges) == train_wordpiece_reference(counts, 100, ())


def test_no_words_the_empty_word_and_counts_out_of_range():
    assert WordPieceTrainer({}, 5).finished and WordPieceTrainer({}, 5).step() is None
    trainer = WordPieceTrainer({}, 6)
    assert trainer.step() is None and trainer.stopped_early and trainer.vocab == list(SPECIAL_TOKENS)
    trainer = WordPieceTrainer({"": 3, "ab": 2}, 100)
    trainer.run()
    assert trainer.merges == [("a", "##b")] and [w.parts for w in trainer.words(2)] == [[], ["ab"]]
    assert trainer.corpus_size == 4 and trainer.tokens_in_corpus == 2
    with pytest.raises(ValueError, match="word counts must be positive"):
        WordPieceTrainer({"ab": 0}, 100)
    with pytest.raises(OverflowError, match="over 2\\^63 characters in all"):
        WordPieceTrainer({"ab": 2**62, "abc": 2**62}, 100)


@pytest.mark.parametrize("size", [2**31, 10**20])
def test_a_size_past_what_the_core_numbers_merges_until_no_pair_is_left(size):
    """As BPE and Unigram do: the size is a bound, never an overflow."""
    counts = {"hello": 2, "world": 2}
    trainer = WordPieceTrainer(counts, size, ())
    trainer.run()
    assert trainer.stopped_early and trainer.finished
    assert (trainer.vocab, trainer.merges) == train_wordpiece_reference(counts, 1000, ())


@pytest.mark.parametrize(("name", "size"), [("corpus.en", 400), ("zh-xiyouji-9k.txt", None)])
def test_the_committed_corpora_match_the_reference(name, size):
    counts = count_file_words(fixture_file(name), "bert")
    size = size or alphabet_size(counts) + 300
    trainer = WordPieceTrainer(counts, size)
    trainer.run()
    assert (trainer.vocab, trainer.merges) == train_wordpiece_reference(counts, size)


# -- stepping, running, going back ------------------------------------------------------------


@settings(max_examples=150)
@given(counts=corpora(), extra=st.integers(0, 30), data=st.data())
def test_stepping_running_and_going_back_agree(counts, extra, data):
    size = alphabet_size(counts) + extra
    ran = WordPieceTrainer(counts, size)
    ran.run()
    stepped = WordPieceTrainer(counts, size)
    records = steps(stepped)
    assert [s.pair for s in records] == stepped.merge_pairs == ran.merge_pairs
    assert [s.new_id for s in records] == stepped.merge_ids == ran.merge_ids
    assert [s.count for s in records] == stepped.merge_counts == ran.merge_counts
    assert (stepped.vocab, stepped.stopped_early) == (ran.vocab, ran.stopped_early)
    for k in data.draw(st.lists(st.integers(0, len(records)), max_size=4)):
        stepped.goto(k)
        assert stepped.merge_pairs == ran.merge_pairs[:k] and stepped.vocab == ran.vocab[: len(stepped.vocab)]
        if k < len(records):  # the state the first pass had there: the same record, every event
            assert stepped.step() == records[k]
    stepped.goto(len(records))
    stepped.run()  # finds no pair left (when so) as the first pass did, popping the last stale entries
    assert (stepped.merges, stepped.pair_counter, stepped.heap_size) == (ran.merges, ran.pair_counter, ran.heap_size)
    assert stepped.stopped_early == ran.stopped_early


@settings(max_examples=150)
@given(counts=corpora(), extra=st.integers(0, 30), k=st.integers(1, 8))
def test_top_pairs_are_in_the_rules_order_and_change_nothing(counts, extra, k):
    size = alphabet_size(counts) + extra
    looked, plain = WordPieceTrainer(counts, size), WordPieceTrainer(counts, size)
    while True:
        counter = looked.pair_counter
        assert looked.top_pairs(k) == [(p, counter[p]) for p in ranked(looked, counter, symbol_counts(looked))[:k]]
        step = looked.step()
        assert step == plain.step()
        if step is None:
            break


@settings(max_examples=200)
@given(counts=corpora(), extra=st.integers(0, 30), specials=SPECIALS)
def test_each_steps_events_add_up(counts, extra, specials):
    """Each ``WordPieceStep`` beside the counts before and after it: the rule's winner and
    ties, BPE's choice, every count change once (applied to the pair counts before, they give
    the pair counts after), the symbols' counts, a fresh entry for every live pair holding a
    symbol whose count moved, and stale pops that were out of date."""
    trainer = WordPieceTrainer(counts, alphabet_size(counts, specials) + extra, specials)
    counter, symbol = trainer.pair_counter, symbol_counts(trainer)
    assert (counter, symbol) == recount(trainer, counts)
    while (step := trainer.step()) is not None:
        a, b = step.pair
        order = ranked(trainer, counter, symbol)
        assert order[0] == step.pair and (step.count, step.left_count, step.right_count) == (counter[a, b], symbol[a], symbol[b])
        assert step.score == score(step.pair, counter, symbol)
        assert step.ties == [p for p in order[1:] if score(p, counter, symbol) == step.score][:TIE_LIMIT]
        v = trainer.vocab
        bpe = max(counter, key=lambda p: (counter[p], v[p[0]].encode(), v[p[1]].encode()))
        assert (step.bpe_pair, step.bpe_count) == (bpe, counter[bpe])
        assert (step.bpe_left_count, step.bpe_right_count) == (symbol[bpe[0]], symbol[bpe[1]])
        for pop in step.stale:  # popped while selecting, before the merge
            assert pop.actual == counter.get(pop.pair, 0)
        after = {p: c for p, c in counter.items() if p != step.pair}
        for change in step.changes:
            assert change.before == counter.get(change.pair, 0) != change.after and change.pair != step.pair
            after[change.pair] = change.after
        after = {p: c for p, c in after.items() if c}
        assert len({c.pair for c in step.changes}) == len(step.changes)
        symbol += [0] * (len(v) - len(symbol))
        assert [s.symbol for s in step.symbol_changes] == list(dict.fromkeys((a, b, step.new_id)))
        for s in step.symbol_changes:
            assert symbol[s.symbol] == s.before
            symbol[s.symbol] = s.after
        assert (after, symbol) == (trainer.pair_counter, symbol_counts(trainer)) == recount(trainer, counts)
        moved = {a, b, step.new_id}
        assert sorted(step.pushes) == sorted((p, c) for p, c in after.items() if moved & set(p))
        assert step.pair_count == len(after) and step.heap_size == trainer.heap_size >= len(after)
        counter = after
