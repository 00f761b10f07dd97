"""The Unigram trainer (``engine.train.unigram``) against the plain one that enumerates every
segmentation: the same seeds, likelihoods, expected counts, Viterbi counts, losses and, round
by round, the same pieces; SentencePiece's view of the text; stepping, running and going
back agreeing; the committed corpora."""

from __future__ import annotations

import math
import random
from array import array
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import CorpusError, SettingsError
from engine.train.unigram import reference as ref
from engine.train.unigram import rule
from engine.train.unigram.rule import (
    EXPECTED_THRESHOLD,
    KEEP,
    SPACE,
    SUB_ITERATIONS,
    count_file_words,
    count_words,
    desired_size,
    script_classes,
    shrunk_size,
    valid_piece,
)
from engine.train.unigram.trainer import UnigramTrainer
from tests.conftest import fixture_file

ALPHABETS = ["ab", "abc", "ab1", "aé,", "山水,"]
"""Few letters make repeats (seeds, ties); a digit, a comma and Han beside Latin exercise
the one-script rule."""
TOL = 1e-9


@st.composite
def corpora(draw: st.DrawFn) -> Counter[str]:
    """Word counts of a few short lines."""
    letters = draw(st.sampled_from(ALPHABETS))
    word = st.text(letters, min_size=1, max_size=6)
    lines = draw(st.lists(st.lists(word, min_size=1, max_size=3).map(" ".join), min_size=1, max_size=6))
    return count_words(["\n".join(lines)])


def scores_of(trainer: UnigramTrainer) -> dict[str, float]:
    return dict(trainer.pieces())


def close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL * max(1.0, abs(b))


def randomize(trainer: UnigramTrainer, data: st.DataObject) -> dict[str, float]:
    """Give every piece a random log-probability; returns the pieces' scores. They come from
    a generator seeded by the draw, not from hypothesis's floats, which seek out ties (-1.0
    and -1.0 against -2.0): where two best paths tie, either is right, and the trainer and
    the reference may take different ones."""
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    values = [rng.uniform(-8, -0.25) for _ in range(trainer.size)]
    trainer._core.set_scores(array("d", values))
    return scores_of(trainer)


# -- the stages, one by one, against brute force ------------------------------------------


@settings(max_examples=150)
@given(corpora())
def test_seeds_are_the_references(words: Counter[str]) -> None:
    got = scores_of(UnigramTrainer(words, 1000))
    want = ref.seed_pieces(words)
    assert list(got) == list(want)
    assert all(close(got[p], want[p]) for p in want)


@settings(max_examples=150)
@given(corpora(), st.data())
def test_likelihood_and_expected_counts_are_the_references(words: Counter[str], data: st.DataObject) -> None:
    trainer = UnigramTrainer(words, 1000)
    scores = randomize(trainer, data)
    loglik, parts = trainer._e_step()
    expected = [math.fsum(v) for v in zip(*(memoryview(p).cast("d") for p in parts), strict=True)]
    want_loglik, want = ref.e_step(words, scores)
    assert close(loglik, want_loglik)
    assert all(close(e, want[p]) for p, e in zip(scores, expected, strict=True))


@settings(max_examples=150)
@given(corpora(), st.data())
def test_viterbi_counts_and_losses_are_the_references(words: Counter[str], data: st.DataObject) -> None:
    trainer = UnigramTrainer(words, 1000)
    scores = randomize(trainer, data)
    tokens, freq, losses, kinds = trainer._analysis()
    want_tokens, want = ref.analyze(words, scores)
    assert tokens == want_tokens
    for i, piece in enumerate(scores):
        assert (kinds[i], freq[i]) == (want[piece].kind, want[piece].freq), piece
        assert close(losses[i], want[piece].loss), piece


@settings(max_examples=100)
@given(corpora(), st.data())
def test_the_m_step_is_the_references(words: Counter[str], data: st.DataObject) -> None:
    trainer = UnigramTrainer(words, 1000)
    scores = randomize(trainer, data)
    _, expected = ref.e_step(words, scores)
    dropped = trainer._core.m_step([array("d", expected.values())], EXPECTED_THRESHOLD)
    want = rule.m_step(expected, trainer.characters)
    got = scores_of(trainer)
    assert list(got) == list(want)
    assert dropped == len(scores) - len(want)
    assert all(close(got[p], want[p]) for p in want)


@settings(max_examples=60)
@given(corpora(), st.integers(0, 12))
def test_each_round_keeps_what_the_reference_keeps(words: Counter[str], extra: int) -> None:
    """Round by round from the trainer's own state: the reference's EM and pruning keep the
    same pieces with the same scores, unless two losses at the cut are equal to within
    rounding (then either choice is the rule's, and the runs may part)."""
    vocab_size = len({c for w in words for c in w}) + 1 + extra
    trainer = UnigramTrainer(words, vocab_size)
    chars = set(trainer.characters)
    while not trainer.finished:
        before = scores_of(trainer)
        event = trainer.step()
        assert event is not None
        if event.final:
            want = ref.finalize(words, before, vocab_size - 1)
            assert scores_of(trainer) == want
            continue
        scores = before
        for _ in range(SUB_ITERATIONS):
            _, scores = ref.em_round(words, scores, chars)
        _, analysis = ref.analyze(words, scores)
        target = shrunk_size(len(scores), desired_size(vocab_size))
        want = ref.prune(words, scores, desired_size(vocab_size))
        got = scores_of(trainer)
        if set(got) != set(want):
            assert near_tie(words, scores, analysis, target)
            return
        assert all(close(got[p], want[p]) for p in want)


def near_tie(words: Counter[str], scores: dict[str, float], analysis: dict[str, ref.Analysis], target: int) -> bool:
    """Whether a choice of the pruning rests on numbers equal to within rounding: two best
    segmentations of a word, a piece and its best split, or the losses at the cut."""
    for text in [*words, *(p for p in scores if len(p) > 1)]:
        logs = sorted((ref.log_score(s, scores) for s in ref.segmentations(text, scores)), reverse=True)
        if len(logs) > 1 and logs[0] - logs[1] < 1e-9:
            return True
    ranked = sorted((a.loss for a in analysis.values() if a.kind == 0), reverse=True)
    kept = target - sum(a.kind == KEEP for a in analysis.values())
    return 0 < kept < len(ranked) and ranked[kept - 1] - ranked[kept] < 1e-9


def test_the_reference_trainer_runs_to_the_vocabulary_size() -> None:
    words = count_words(["the cat sat on the mat\nthe cats sat on the hat\na cat in a hat"])
    rounds = ref.train_unigram_reference(words, 20)
    assert len(rounds[-1]) <= 19 and {c for w in words for c in w} <= set(rounds[-1])
    trainer = UnigramTrainer(words, 20)
    trainer.run()
    assert trainer.rounds_done == len(rounds)
    assert set(scores_of(trainer)) == set(rounds[-1])


# -- a real corpus ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def english() -> Counter[str]:
    return count_file_words(fixture_file("corpus.en"))


def test_training_reaches_the_vocabulary_size_keeping_every_character(english: Counter[str]) -> None:
    trainer = UnigramTrainer(english, 1000)
    events = []
    while (event := trainer.step()) is not None:
        events.append(event)
    assert trainer.finished and trainer.step() is None
    vocab = trainer.vocab()
    assert len(vocab) == 1000 and vocab[0] == ("<unk>", 0.0)
    pieces = [p for p, _ in vocab[1:]]
    assert set(trainer.characters) <= set(pieces) and len(set(pieces)) == len(pieces)
    assert [s for _, s in vocab[1:]] == sorted((s for _, s in vocab[1:]), reverse=True)
    assert all(valid_piece(p, dict(zip(trainer.characters, script_classes(trainer.characters), strict=True))) for p in pieces)
    assert [e.number for e in events] == list(range(1, len(events) + 1)) and events[-1].final
    assert all(not e.final for e in events[:-1])
    for e in events:
        assert len(e.likelihoods) == (1 if e.final else SUB_ITERATIONS) and e.log_likelihood == e.likelihoods[-1] < 0
        assert e.size_after <= e.size_before - e.dropped
        assert len(e.removed) == e.size_before - e.dropped - e.size_after
        assert not {r.piece for r in e.removed} & set(trainer.characters)
    first = events[0]
    assert first.dropped > 0 and first.changed and all(c.before != c.after for c in first.changed)
    moves = [abs(c.after - c.before) for c in first.changed]
    assert moves == sorted(moves, reverse=True)
    pruned = [r for r in first.removed if r.reason == "pruned"]
    assert pruned and all(r.loss >= 0 and r.uses > 0 for r in pruned)
    assert trainer.history == [(e.log_likelihood, e.size_after) for e in events]


def test_rounds_are_deterministic_and_goto_replays_them(english: Counter[str]) -> None:
    trainer = UnigramTrainer(english, 800, threads=1)
    trainer.run(until=2)
    after_two = trainer.pieces()
    trainer.run()
    final = trainer.pieces()
    trainer.goto(2)
    assert trainer.rounds_done == 2 and not trainer.finished and trainer.pieces() == after_two
    trainer.goto(trainer.rounds_done + 100)
    assert trainer.pieces() == final
    other = UnigramTrainer(english, 800, threads=3)
    other.run()
    assert other.pieces() == final and other.history == trainer.history


def test_chinese_trains_with_lines_as_words() -> None:
    words = count_file_words(fixture_file("zh-xiyouji-9k.txt"))
    trainer = UnigramTrainer(words, 800)
    trainer.run()
    pieces = [p for p, _ in trainer.vocab()]
    assert len(pieces) == 800 and "▁" in pieces and any(len(p) > 1 and "▁" not in p for p in pieces)


def test_a_vocabulary_smaller_than_the_characters_is_refused(english: Counter[str]) -> None:
    chars = len({c for w in english for c in w})
    with pytest.raises(SettingsError, match="characters of this corpus"):
        UnigramTrainer(english, chars)
    UnigramTrainer(english, chars + 1)
    with pytest.raises(SettingsError, match="<unk>"):
        UnigramTrainer(english, 1000, special_tokens=("<s>",))


# -- the text as SentencePiece sees it ------------------------------------------------------


def test_words_are_cut_at_spaces_and_lines_only() -> None:
    text = "  Hello  world \nfoo\tbar\r\n\n a▁b ▁"
    assert count_words([text]) == Counter({"▁Hello": 1, "▁world": 1, "▁foo\tbar\r": 1, "▁a": 1, "▁b": 1, "▁": 2})


def test_a_file_is_counted_as_the_whole_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = fixture_file("zh-xiyouji-9k.txt").read_text(encoding="utf-8") + " " + "x" * 40 + "\nend"
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8", newline="")
    monkeypatch.setattr(rule, "BLOCK_SIZE", 7)  # blocks cut inside characters and inside the long word
    assert count_file_words(path) == count_words([text])
    path.write_bytes(b"ok \xff\n")
    with pytest.raises(CorpusError, match="not valid UTF-8 at byte offset 3"):
        count_file_words(path)
    path.write_bytes(b"  \n ")
    with pytest.raises(CorpusError, match="no words"):
        count_file_words(path)


def test_a_piece_keeps_to_one_script() -> None:
    chars = "abé1,山ひカー▁\u0301"
    classes = dict(zip(chars, script_classes(chars), strict=True))
    ok = ["ab", f"{SPACE}ab", "1,", ",,", "山ひカー", "a\u0301b", "\u0301a", SPACE]
    bad = ["a1", "a,", "山a", f"a{SPACE}", f"{SPACE}{SPACE}", "a" * 17]
    assert [valid_piece(p, classes) for p in ok] == [True] * len(ok)
    assert [valid_piece(p, classes) for p in bad] == [False] * len(bad)


def test_digamma_is_sentencepieces() -> None:
    assert close(rule.digamma(1.0), -0.5772156649015329)
    assert close(rule.digamma(0.5), -1.9635100260214235)
    assert close(rule.digamma(100.0), 4.600161852738087)
