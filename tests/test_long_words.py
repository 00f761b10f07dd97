"""Long pre-tokens (hundreds to thousands of bytes: DNA lines, text without spaces, one huge
word): the trainer gives the reference trainer's merges, and its step-by-step records agree
with its counts, whatever the words' lengths.

A merge finds a short word's count by going to its end and a long word's from the word
starts (``engine/train/_trainer_core.c``), so these words are long enough to take the second
way, and several of them share substrings so that a pair's positions span words.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Trainer, train_reference
from tests.conftest import assert_changes_account_for

ALPHABETS = ("ACGT", "ab", "abcdefgh", "é中a")
LARGE = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
"""Long examples are the point here."""


@st.composite
def long_word(draw: st.DrawFn, alphabet: str, size: tuple[int, int] = (100, 3000)) -> bytes:
    """A word made of a few motifs repeated in a random order, with some letters changed: the
    repeats make pairs that merge many times over in one word."""
    letters = st.sampled_from(alphabet)
    motifs = draw(st.lists(st.text(letters, min_size=1, max_size=12), min_size=1, max_size=4))
    length = draw(st.integers(*size))
    rnd = random.Random(draw(st.integers(0, 2**32)))  # the letters follow from a seed: a small example
    out: list[str] = []
    while sum(map(len, out)) < length:
        motif = rnd.choice(motifs)
        out.append(motif if rnd.random() < 0.8 else rnd.choice(alphabet) + motif[1:])
    return "".join(out).encode("utf-8")


@st.composite
def long_word_counts(draw: st.DrawFn) -> dict[bytes, int]:
    """A few long words, sometimes with a few short ones, each with a count."""
    alphabet = draw(st.sampled_from(ALPHABETS))
    words = draw(st.lists(long_word(alphabet), min_size=1, max_size=4))
    words += draw(st.lists(st.text(alphabet, min_size=1, max_size=8).map(str.encode), max_size=6))
    return {w: draw(st.integers(1, 5)) for w in words}


@settings(max_examples=40, suppress_health_check=LARGE)
@given(counts=long_word_counts(), extra=st.integers(1, 80))
def test_long_words_give_the_reference_merges(counts, extra):
    trainer = Trainer(counts, 256 + extra)
    trainer.run()
    vocab, merges = train_reference(counts, 256 + extra)
    assert trainer.merges == merges
    assert trainer.vocab == vocab


@settings(max_examples=6, suppress_health_check=LARGE)
@given(word=st.sampled_from(ALPHABETS).flatmap(lambda a: long_word(a, (10_000, 30_000))), extra=st.integers(20, 60))
def test_one_huge_word_gives_the_reference_merges(word, extra):
    trainer = Trainer({word: 1}, 256 + extra)
    trainer.run()
    assert trainer.merges == train_reference({word: 1}, 256 + extra)[1]


@settings(max_examples=25, suppress_health_check=LARGE)
@given(counts=long_word_counts(), extra=st.integers(1, 40))
def test_long_words_step_records_agree_with_counts(counts, extra):
    """Step by step, each merge's changes turn the pair counts before it into those after it,
    and the steps make the merges a plain run makes."""
    trainer = Trainer(counts, 256 + extra)
    while True:
        before = trainer.pair_counter
        record = trainer.step()
        if record is None:
            break
        assert_changes_account_for(before, record, trainer.pair_counter)
    ran = Trainer(counts, 256 + extra)
    ran.run()
    assert trainer.merges == ran.merges
    words = [trainer.word_cells(i) for i in range(len(counts))]
    assert {w.text: w.count for w in words} == counts
    for word in words:  # its cells, linked, still spell it
        assert b"".join(trainer.token_bytes(c.token) for c in word.cells) == word.text
