"""The optimized trainer: exact against the reference fixture and the plain reference trainer."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import PreTokenizer, SettingsError, TokenIdError, Trainer, WordPieceTrainer, train_bpe, train_reference
from engine.corpus.counting import count_file
from engine.train.classic import ClassicTrainer
from tests.conftest import assert_changes_account_for, fixture_file

SPECIAL = "<|endoftext|>"


def test_reference_fixture_merges_and_vocab(reference_merges, reference_vocab):
    corpus = fixture_file("corpus.en")
    vocab, merges = train_bpe(corpus, 500, [SPECIAL])
    assert merges == reference_merges
    assert set(vocab.values()) == reference_vocab
    assert len(vocab) == 500


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_same_result_for_any_number_of_workers(monkeypatch, workers, reference_merges):
    """Small blocks, so every worker gets some and the counts are put together from many."""
    monkeypatch.setattr("engine.corpus.counting.IN_PROCESS", 0)  # workers even for a small file
    corpus = fixture_file("corpus.en")
    counts = count_file(corpus, PreTokenizer("gpt2", [SPECIAL]), workers=workers, block_size=8192)
    trainer = Trainer(counts, 500, [SPECIAL])
    trainer.run()
    assert trainer.merges == reference_merges


def test_ids_layout_bytes_then_specials_then_merges():
    trainer = Trainer.from_text("low lower lowest<|a|> newest<|b|>", 270, ["<|a|>", "<|b|>"])
    trainer.run()
    vocab = trainer.vocab
    assert all(vocab[i] == bytes([i]) for i in range(256))
    assert vocab[256] == b"<|a|>" and vocab[257] == b"<|b|>"
    for k, (left, right) in enumerate(trainer.merges):
        assert vocab[258 + k] == left + right


def test_overlapping_pairs_merge_left_to_right():
    trainer = Trainer.from_text("aaa", 258)
    step = trainer.step()
    assert step is not None and step.token == b"aa" and step.count == 2
    assert trainer.words(1)[0].parts == [b"aa", b"a"]


def test_stops_early_when_pairs_run_out():
    trainer = Trainer.from_text("ab ab", 1000)
    trainer.run()
    assert trainer.stopped_early
    assert trainer.merges_done == 2 < trainer.merges_planned  # "ab", then " " + "ab"


@pytest.mark.parametrize("kind", [Trainer, ClassicTrainer, WordPieceTrainer])
def test_token_names_an_id_past_the_vocabulary_so_far(kind):
    """Every steppable trainer's ``token`` looks up the vocabulary as it is now: an id past
    it (a merge gone back over, say), a negative one, a bool or a non-integer is a
    ``TokenIdError`` in decode's words."""
    trainer = kind.from_text("low lower lowest newest widest", 300 if kind is Trainer else 30)
    trainer.run()
    trainer.goto(1)
    top = len(trainer.vocab) - 1
    assert trainer.token(top) == trainer.vocab[top]
    for i, why in [
        (top + 1, f"is not in the vocabulary (0-{top})"),
        (-1, f"is not in the vocabulary (0-{top})"),
        (True, "is a bool, not a token id"),
        ("a", "is not an integer"),
    ]:
        with pytest.raises(TokenIdError, match=f"^token id {i!r} {re.escape(why)}$"):
            trainer.token(i)


@pytest.mark.parametrize(
    ("vocab_size", "specials"),
    [(255, []), (256, [SPECIAL]), (300, [""]), (300, ["<s>", "<s>"])],
)
def test_bad_settings_raise_settings_error(vocab_size, specials):
    with pytest.raises(SettingsError):
        Trainer.from_text("hello", vocab_size, specials)


@pytest.mark.parametrize(
    ("vocab_size", "specials", "message"),
    [
        (300, SPECIAL, r"a list of strings, not one string: give \['<\|endoftext\|>'\]"),
        (300, [1], "special tokens are strings, not int 1"),
        ("1000", [SPECIAL], "vocab size is a whole number, not str '1000'"),
        (1000.0, [SPECIAL], "vocab size is a whole number, not float 1000.0"),
    ],
)
def test_settings_of_the_wrong_type_are_named(tmp_path, vocab_size, specials, message):
    """Before any file is read: one string of special tokens was taken letter by letter
    ("duplicate special token: 'e'"), and the other types failed deep inside counting."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world\n")
    with pytest.raises(SettingsError, match=message):
        train_bpe(str(corpus), vocab_size, specials)


# -- property tests: optimized == reference, step() == run() --------------------------------

PIECES = [
    "a",
    "aa",
    "aaaa",
    "ab",
    "ba",
    "the",
    " the",
    "The",
    "don't",
    "we'll",
    "I'm",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "0",
    "12",
    "2024",
    "é",
    "naïve",
    "你好",
    "世界",
    "😀",
    "👍🏽",
    "🇫🇷",
    ".",
    ",",
    "!?",
    "--",
    "<|endoftext|>",
    "<|pad|>",
    "ab ab",
    "x",
    "yy",
]
corpora = st.lists(st.sampled_from(PIECES), min_size=1, max_size=60).map("".join)


def _counts(text: str, specials: list[str]) -> dict[bytes, int]:
    return PreTokenizer("gpt2", specials).count(text)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(text=corpora, extra=st.integers(0, 60), specials=st.sampled_from([[], ["<|endoftext|>"], ["<|endoftext|>", "<|pad|>"]]))
def test_optimized_equals_reference(text, extra, specials):
    vocab_size = 256 + len(specials) + extra
    counts = _counts(text, specials)
    trainer = Trainer(counts, vocab_size, specials)
    trainer.run()
    ref_vocab, ref_merges = train_reference(counts, vocab_size, specials)
    assert trainer.merges == ref_merges
    assert trainer.vocab == ref_vocab


@settings(max_examples=80)
@given(text=corpora, extra=st.integers(0, 40))
def test_step_by_step_equals_run(text, extra):
    counts = _counts(text, [])
    stepped = Trainer(counts, 256 + extra)
    records = []
    while (record := stepped.step()) is not None:
        records.append(record)
    ran = Trainer(counts, 256 + extra)
    ran.run()
    streamed = Trainer(counts, 256 + extra)
    assert list(streamed.steps()) == records
    assert stepped.merges == ran.merges == streamed.merges
    assert [r.pair for r in records] == list(stepped.merge_pairs)
    assert [r.index for r in records] == list(range(1, len(records) + 1))


@settings(max_examples=60)
@given(text=corpora, extra=st.integers(1, 40))
def test_events_agree_with_counts(text, extra):
    """Each step's changes turn the pair counts before it into the pair counts after it."""
    counts = _counts(text, [])
    trainer = Trainer(counts, 256 + extra)
    while True:
        before = dict(trainer.pair_counter)
        top = trainer.top_pairs(1)
        record = trainer.step()
        if record is None:
            assert trainer.finished and (not top or trainer.merges_done == trainer.merges_planned)
            break
        assert top[0] == (record.pair, record.count)
        assert_changes_account_for(before, record, trainer.pair_counter)
        for tie in record.ties:
            assert before[tie] == record.count


@settings(max_examples=60)
@given(text=corpora, k=st.integers(0, 30))
def test_goto_backwards_equals_fresh_run(text, k):
    counts = _counts(text, [])
    trainer = Trainer(counts, 300)
    trainer.run()
    full = trainer.merges
    trainer.goto(k)
    fresh = Trainer(counts, 300)
    fresh.run(until=k)
    assert trainer.merges == fresh.merges
    assert trainer.words(5) == fresh.words(5)
    assert trainer.top_pairs(5) == fresh.top_pairs(5)
    trainer.run()  # going on from the rebuilt heap gives the uninterrupted result
    assert trainer.merges == full


def _desc(token: bytes) -> tuple[int, ...]:
    return tuple(-x for x in token) + (1,)


@settings(max_examples=80)
@given(text=corpora, merges=st.integers(0, 30), k=st.integers(1, 12))
def test_top_pairs_is_the_sorted_pair_counter(text, merges, k):
    """Stale heap entries included, top_pairs is the exact order."""
    trainer = Trainer(_counts(text, []), 256 + merges)
    trainer.run()
    vocab = trainer.vocab
    expected = sorted(
        trainer.pair_counter.items(),
        key=lambda pc: (-pc[1], _desc(vocab[pc[0][0]]), _desc(vocab[pc[0][1]])),
    )[:k]
    assert trainer.top_pairs(k) == expected


def test_event_rows_read_like_lists():
    """A step's packed events index, slice, iterate and compare as the lists they stand for."""
    trainer = Trainer.from_text("abab abab abc the then there", 270)
    step = trainer.step()
    assert step is not None
    changes = list(step.changes)
    assert len(step.changes) == len(changes) > 0
    assert [step.changes[i] for i in range(-len(changes), len(changes))] == changes + changes
    assert step.changes[1:] == changes[1:] and step.changes[::-1] == changes[::-1]
    assert step.changes == changes and step.pushes == list(step.pushes)
    with pytest.raises(IndexError):
        step.changes[len(changes)]
    assert all(isinstance(c.pair, tuple) and c.side in ("prev", "next") for c in changes)
