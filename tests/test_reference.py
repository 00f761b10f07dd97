"""The plain reference trainer's step-by-step form: the merges ``train_reference`` gives, one
at a time, and those of the optimized trainer."""

from __future__ import annotations

from itertools import islice

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import PreTokenizer, SettingsError, Trainer, reference_merges, train_reference
from tests.test_trainer import corpora

SPECIAL = "<|endoftext|>"


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(text=corpora, extra=st.integers(0, 50), specials=st.sampled_from([[], [SPECIAL]]))
def test_generator_yields_exactly_the_merges_of_train_reference(text, extra, specials):
    counts = PreTokenizer("gpt2", specials).count(text)
    vocab_size = 256 + len(specials) + extra
    stepped = list(reference_merges(counts, vocab_size, specials))
    vocab, merges = train_reference(counts, vocab_size, specials)
    assert stepped == merges
    assert list(vocab.values())[256 + len(specials) :] == [a + b for a, b in stepped]
    trainer = Trainer(counts, vocab_size, specials)
    trainer.run()
    assert stepped == trainer.merges


def test_merges_arrive_one_at_a_time():
    """The first merges come before the rest are computed: taking three stops there."""
    counts = PreTokenizer("gpt2", [SPECIAL]).count("the cat, the hat, the mat " * 20)
    merges = reference_merges(counts, 1000, [SPECIAL])
    assert list(islice(merges, 3)) == train_reference(counts, 256 + 1 + 3, [SPECIAL])[1]
    assert next(merges) == train_reference(counts, 256 + 1 + 4, [SPECIAL])[1][3]


def test_stops_when_no_pair_is_left():
    counts = PreTokenizer("gpt2", []).count("ab ab")
    assert list(reference_merges(counts, 1000)) == [(b"a", b"b"), (b" ", b"ab")]


def test_bad_settings_on_the_first_merge():
    with pytest.raises(SettingsError):
        next(reference_merges({b"ab": 1}, 255))
