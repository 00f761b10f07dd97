"""Classic word-level BPE with ``</w>``: the lecture notes' worked examples, and the steppable
trainer against the plain recount-everything one."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import CorpusError, SettingsError
from engine.corpus.words import count_file_words, count_words, merge_symbols
from engine.train.classic import ClassicModel, ClassicTrainer, alphabet, symbols
from engine.train.classic_reference import train_classic_reference
from engine.train.trainer import TIE_LIMIT
from tests.conftest import ROOT, fixture_file


def merged(trainer: ClassicTrainer) -> list[str]:
    return [f"{a} {b}" for a, b in trainer.merges]


def trained(word_counts, merges: int, **kwargs) -> ClassicTrainer:
    trainer = ClassicTrainer(word_counts, 10**6, **kwargs)
    trainer.run(until=merges)
    return trainer


def segmentation(trainer: ClassicTrainer) -> dict[str, list[str]]:
    return {w.text: w.parts for w in trainer.words(10**6)}


# -- seed 002: the DeepSeek paragraph ------------------------------------------------------


def seed_002() -> str:
    """The part of the seed 002 notes these tests read (its DeepSeek paragraph and what they print of it)."""
    return fixture_file("lecture-002-deepseek.txt").read_text(encoding="utf-8")


def deepseek_counts():
    notes = seed_002()
    text = notes[notes.index("text = '''") + 10 :]
    return count_words([text[: text.index("'''")]], "punct")  # the notes' \w+|[^\w\s]


def test_seed_002_deepseek_pair_counts_in_first_seen_order():
    """The notes print ``get_stats`` of the paragraph: every count, in first-seen order."""
    notes = seed_002()
    line = next(s for s in notes.splitlines() if s.startswith("defaultdict(<class 'int'>"))
    listed = [((a, b), int(n)) for a, b, n in re.findall(r"\('([^']*)', '([^']*)'\): (\d+)", line)]
    assert len(listed) > 50
    trainer = ClassicTrainer(deepseek_counts(), 10**6, split="punct")
    names = [((trainer.token(a), trainer.token(b)), n) for (a, b), n in trainer.pair_counter.items()]
    assert names[: len(listed)] == listed


def test_seed_002_deepseek_merges_as_listed():
    """The 36 merges the notes print, ``Step 1: merge ('-', '</w>')`` on: the ties among them
    are settled by first sight (greater or smaller pairs first would part at merge 7 or 10)."""
    listed = [(a, b) for a, b in re.findall(r"Step \d+: merge \('([^']*)', '([^']*)'", seed_002())]
    assert len(listed) == 36 and listed[13] == ("D", "ee") and listed[35] == ("c", "e</w>")
    trainer = trained(deepseek_counts(), 36, split="punct")
    assert trainer.merges == listed
    assert trainer.vocab[-1] == "ce</w>"


# -- seed 002: hug, pug, pun, bun, hugs (no end-of-word marker in that example) ------------

HUGS = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}


def test_seed_002_hug_example_three_merges():
    trainer = ClassicTrainer(HUGS, 10**6, end_of_word=None)
    assert trainer.vocab == ["b", "g", "h", "n", "p", "s", "u"]
    seen = []
    for _ in range(3):
        step = trainer.step()
        seen.append((trainer.token(step.pair[0]), trainer.token(step.pair[1]), step.count))
    assert seen == [("u", "g", 20), ("u", "n", 16), ("h", "ug", 15)]
    assert trainer.vocab == ["b", "g", "h", "n", "p", "s", "u", "ug", "un", "hug"]
    assert segmentation(trainer) == {
        "hug": ["hug"],
        "pug": ["p", "ug"],
        "pun": ["p", "un"],
        "bun": ["b", "un"],
        "hugs": ["hug", "s"],
    }


def test_seed_002_hug_example_with_end_of_word_parts_at_merge_3():
    """With ``</w>`` the same words take another path: ``un</w>`` (16) beats ``hug`` (15)."""
    assert merged(trained(HUGS, 3)) == ["u g", "u n", "un </w>"]


# -- seed 004: the, highest, quality ---------------------------------------------------------


def test_seed_004_vocabulary_and_splits():
    """The notes' initial ``vocab`` also lists an ``o``, which none of the words holds."""
    counts = {"the": 1, "highest": 2, "quality": 1}
    assert alphabet(counts) == ["</w>", "a", "e", "g", "h", "i", "l", "q", "s", "t", "u", "y"]
    trainer = ClassicTrainer(counts, 100)
    assert segmentation(trainer)["highest"] == ["h", "i", "g", "h", "e", "s", "t", "</w>"]


def test_seed_004_first_merge_hi_by_first_sight():
    """The notes' pair counts (``('h','i'): 2, ('i','g'): 2, ... ('t','</w>'): 2``) are those
    of ``highest`` and ``quality``: seven pairs at 2, and ``max`` takes ``('h','i')``, the
    first seen; the split and vocabulary then read as the notes print them."""
    trainer = ClassicTrainer({"highest": 2, "quality": 1}, 100)
    step = trainer.step()
    assert (trainer.token(step.pair[0]), trainer.token(step.pair[1]), step.count) == ("h", "i", 2)
    ties = [(trainer.token(a), trainer.token(b)) for a, b in step.ties]
    assert ties == [("i", "g"), ("g", "h"), ("h", "e"), ("e", "s"), ("s", "t")][:TIE_LIMIT]
    assert segmentation(trainer)["highest"] == ["hi", "g", "h", "e", "s", "t", "</w>"]
    assert trainer.vocab[-1] == "hi" and trainer.merges == [("h", "i")]


def test_seed_004_with_the_counted_he_wins():
    """Counting ``the`` too, as the notes' word list does, ``('h','e')`` has 3 and wins."""
    assert merged(trained({"the": 1, "highest": 2, "quality": 1}, 2)) == ["h e", "h i"]


# -- seed 001's introduction and the toy corpus in sample_corpora ---------------------------


def test_seed_001_low_lower_lowest():
    """``low low low lower lowest``: ``lo`` first (tied with ``ow`` at 5, seen first), then ``low``."""
    assert merged(trained(count_words(["low low low lower lowest"]), 2)) == ["l o", "lo w"]


def test_toy_low_lower_file():
    """The notes train this corpus byte-level (``s t`` first: greater bytes win the tie at 9).
    Classic BPE meets the same three-way tie and takes ``e s``, seen first in ``widest``."""
    text = (ROOT / "sample_corpora" / "toy-low-lower.txt").read_text(encoding="utf-8")
    trainer = ClassicTrainer(count_words([text]), 10**6)
    step = trainer.step()
    assert step.count == 9
    assert [(trainer.token(a), trainer.token(b)) for a, b in step.ties] == [("s", "t"), ("t", "</w>")]
    trainer.run(until=12)
    assert merged(trainer) == [
        "e s", "es t", "est </w>", "l o", "lo w", "n e", "ne w", "new est</w>", "low </w>", "w i", "wi d", "wid est</w>",
    ]  # fmt: skip
    assert segmentation(trainer) == {
        "low": ["low</w>"],
        "lower": ["low", "e", "r", "</w>"],
        "widest": ["widest</w>"],
        "newest": ["newest</w>"],
    }


def test_vocab_size_below_the_alphabet_is_refused():
    with pytest.raises(SettingsError, match="vocab size 5 is below the 11 symbols"):
        ClassicTrainer(count_words(["low lower newest widest"]), 5)


# -- the steppable trainer against the plain one ---------------------------------------------

# A small alphabet makes ties and repeats (a a a); "</w>" in the text lets merges spell a
# string twice (a + </w>, a</w + >).
words = st.lists(st.sampled_from(["a", "b", "c", "w", "<", "/", ">", "</w>"]), min_size=1, max_size=6).map("".join)
corpora = st.dictionaries(words, st.integers(1, 6), min_size=1, max_size=12)


@settings(max_examples=300)
@given(counts=corpora, extra=st.integers(0, 40), eow=st.sampled_from(["</w>", None]))
def test_steppable_matches_the_plain_trainer(counts, extra, eow):
    vocab_size = len(alphabet(counts, eow)) + extra
    vocab, merges = train_classic_reference(counts, vocab_size, eow)
    trainer = ClassicTrainer(counts, vocab_size, end_of_word=eow)
    trainer.run()
    assert trainer.merges == merges
    assert trainer.vocab == vocab
    assert len(set(vocab)) == len(vocab)
    assert trainer.stopped_early == (len(merges) < extra)
    model = trainer.model()
    assert segmentation(trainer) == {w: model.segment(w) for w in counts}


@settings(max_examples=200)
@given(counts=corpora, eow=st.sampled_from(["</w>", None]))
def test_each_step_tells_what_a_recount_sees(counts, eow):
    """Every ``MergeStep`` beside a recount of the words in first-seen order: the same pair,
    count and ties, every count change exactly once, the sizes after it; a stale pop is an
    entry the heap held with an out-of-date count or first occurrence."""
    trainer = ClassicTrainer(counts, 10**6, end_of_word=eow)
    segmented = {tuple(symbols(w, eow)): c for w, c in counts.items()}
    name = lambda pair: (trainer.token(pair[0]), trainer.token(pair[1]))  # noqa: E731
    while True:
        recount: dict[tuple[str, str], int] = {}  # dict order: first seen
        for word, count in segmented.items():
            for pair in zip(word, word[1:], strict=False):
                recount[pair] = recount.get(pair, 0) + count
        assert {name(p): c for p, c in trainer.pair_counter.items()} == recount
        top = [(name(p), c) for p, c in trainer.top_pairs(3)]
        step = trainer.step()
        if step is None:
            assert not recount and trainer.stopped_early
            break
        best = max(recount.values())
        tied = [p for p, c in recount.items() if c == best]
        assert (name(step.pair), step.count) == (tied[0], best) == top[0]
        assert [name(p) for p in step.ties] == tied[1 : TIE_LIMIT + 1]
        assert step.token == "".join(tied[0]) == trainer.token(step.new_id)
        before = recount
        segmented = {merge_symbols(w, *tied[0], "".join(tied[0])): c for w, c in segmented.items()}
        after: dict[tuple[str, str], int] = {}
        for word, count in segmented.items():
            for pair in zip(word, word[1:], strict=False):
                after[pair] = after.get(pair, 0) + count
        moved = {p: (before.get(p, 0), after.get(p, 0)) for p in {*before, *after} if before.get(p, 0) != after.get(p, 0)}
        del moved[tied[0]]
        assert {name(c.pair): (c.before, c.after) for c in step.changes} == moved
        assert len(step.changes) == len(moved)
        assert step.pair_count == len(after) and step.heap_size == trainer.heap_size
        for pop in step.stale:  # popped while selecting, before the merge
            assert pop.actual == before.get(name(pop.pair), 0)
        assert {name(p) for p, _ in step.pushes} <= set(after) | set(before)


def test_a_string_spelled_twice_is_one_symbol():
    """``a`` makes ``a</w>`` from the marker; the text ``a</w>`` spells it again from its
    characters: the same symbol (id 6), which the pair after it then joins."""
    trainer = ClassicTrainer({"a": 5, "a</w>": 3}, 100)
    trainer.run(until=6)
    assert merged(trainer) == ["a </w>", "a <", "a< /", "a</ w", "a</w >", "a</w> </w>"]
    assert list(trainer.merge_ids) == [6, 7, 8, 9, 6, 10] and trainer.vocab[6] == "a</w>"
    assert len(trainer.vocab) == 11 and segmentation(trainer) == {"a": ["a</w>"], "a</w>": ["a</w></w>"]}
    assert train_classic_reference({"a": 5, "a</w>": 3}, 100)[1][:6] == trainer.merges


def test_going_back_gives_the_same_state():
    counts = deepseek_counts()
    trainer = ClassicTrainer(counts, 10**6, split="punct")
    trainer.run(until=40)
    at_40 = (trainer.merges, list(trainer.merge_counts), segmentation(trainer), trainer.pair_counter, list(trainer.vocab))
    trainer.run(until=80)
    trainer.goto(40)
    assert (trainer.merges, trainer.merge_counts, segmentation(trainer), trainer.pair_counter, list(trainer.vocab)) == at_40
    assert trainer.step().index == 41


def test_model_file_round_trip(tmp_path):
    trainer = trained(deepseek_counts(), 50, split="punct")
    path = trainer.model().save(tmp_path / "out")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["type"] == "classic-bpe" and data["end_of_word"] == "</w>" and data["split"] == "punct"
    assert data["merges"][0] == ["-", "</w>"] and data["vocab"] == trainer.vocab
    model = ClassicModel.load(tmp_path / "out")
    assert model.merges == trainer.merges and model.segment("DeepSeek") == ["DeepSeek</w>"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["classic_bpe.json"]  # no temporary left
    assert trainer.model().files() == {"classic_bpe.json": path.read_text(encoding="utf-8")}


texts = st.lists(
    st.sampled_from(["low", "er", "新", "😀", ",", ".", "-", " ", "  ", "\n", "\t", "\u3000", "\x1c", "</w>"]), max_size=40
).map("".join)


@settings(max_examples=200)
@given(text=texts, block=st.integers(1, 16), split=st.sampled_from(["whitespace", "punct"]))
def test_reading_in_blocks_counts_as_the_whole_text(tmp_path_factory, text, block, split):
    """Blocks are cut where no word can span the cut: the counts, and their first-seen
    order, are those of the whole text at once."""
    path = tmp_path_factory.mktemp("c") / "c.txt"
    path.write_text(text or " ", encoding="utf-8")
    whole = count_words([text], split)
    if not whole:
        with pytest.raises(CorpusError, match="no words to train on"):
            count_file_words(path, split, block_size=block)
        return
    assert list(count_file_words(path, split, block_size=block).items()) == list(whole.items())
