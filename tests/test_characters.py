"""The characters a token holds part of, counted from the pre-tokens; words followed through
training; a run's merges as a trace of the trainer's events."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import PreTokenizer, Tokenizer, Trainer
from engine.corpus.characters import CharacterCounts, split_partial
from engine.train.follow import Follower, occurrences
from engine.train.trace import replay_records

FIXTURES = Path(__file__).parent / "fixtures"
ZH = FIXTURES / "zh-xiyouji-9k.txt"


def counts_of(text: str) -> CharacterCounts:
    return CharacterCounts.from_words(PreTokenizer("gpt2", []).count(text).items())


def test_chinese_characters_counted_from_the_pre_tokens():
    chars = counts_of("了了了 事事 二 五 中 了事")
    assert chars.counts == {"了": 4, "事": 3, "二": 1, "五": 1, "中": 1}
    found = chars.around("了".encode()[:2])  # \xe4\xba: the first two bytes of 了 事 二 五 (人 is \xe4\xbb)
    assert found is not None
    assert found.closing == b"\xe4\xba" and found.opening == b""
    assert found.begins == ("了", "事", "二", "五")  # most frequent first, ties by code point
    assert found.ends == ()
    last = chars.around("五".encode()[1:])  # \xba\x94: continuation bytes only, the end of 五
    assert last is not None and last.ends == ("五",) and last.begins == ()
    assert chars.around("了".encode()) is None  # a whole character names nothing
    assert chars.around(b" t") is None


def test_emoji_and_accented_latin():
    chars = counts_of("café café naïve 😀😀 😃")
    assert chars.counts == {"é": 2, "ï": 1, "😀": 2, "😃": 1}
    assert chars.around(b"\xc3").begins == ("é", "ï")  # type: ignore[union-attr]
    assert chars.around(b"\xa9").ends == ("é",)  # type: ignore[union-attr]
    assert chars.around(b"\xf0\x9f\x98").begins == ("😀", "😃")  # type: ignore[union-attr]
    middle = chars.around(b"\x9f\x98")  # inside the four bytes of both
    assert middle is not None and middle.ends == ("😀", "😃")
    tail = chars.around(b"\x80 caf\xc3")  # ends 😀 and begins é, with a whole word between
    assert tail is not None and tail.ends == ("😀",) and tail.begins == ("é", "ï")


@pytest.mark.parametrize(
    ("token", "opening", "closing"),
    [
        (b"abc", b"", b""),
        (b"\xba\x94\xe4", b"\xba\x94", b"\xe4"),
        ("了".encode(), b"", b""),
        (b"\xe4\xba", b"", b"\xe4\xba"),
        (b"\x94", b"\x94", b""),
    ],
)
def test_split_partial(token, opening, closing):
    assert split_partial(token) == (opening, closing)


def zh_trainer(vocab_size: int = 400) -> Trainer:
    return Trainer.from_files([ZH], vocab_size, ["<|endoftext|>"], workers=1)


def test_occurrences_whole_and_inside():
    trainer = zh_trainer()
    table = trainer.word_table()
    for word in ("孙悟空".encode(), "行者".encode(), b"\xe4", "不在书里的词".encode()):
        whole = sum(c for w, c in table.items() if w == word)
        inside = sum(c * w.count(word) for w, c in table.items() if w != word)
        found = occurrences(table, word)
        assert found == (whole, inside)
    assert occurrences(table, "行者".encode())[1] > 0


@pytest.mark.parametrize("word", ["孙悟空", "行者道", "tokenization", "唐僧 and 八戒!", "naïve 😀"])
def test_followed_word_segmented_as_the_encoder_would_at_every_merge(word):
    """Forward, back and jumping: the segmentation is that of the tokenizer at that merge."""
    trainer = zh_trainer()
    follower = Follower(trainer.pattern, trainer.special_tokens)
    follower.follow(word, trainer.word_table())
    for k in (0, 1, 40, 144, 7, 0, 100):
        trainer.goto(k)
        (state,) = follower.state(trainer)
        tokenizer = Tokenizer.from_trainer(trainer)
        expected = [tokenizer.vocab[i] for i in tokenizer.encode(word)]
        assert [part for piece in state.pieces for part in piece.parts] == expected
        assert b"".join(piece.text for piece in state.pieces) == word.encode()
        numbers = [change.merge for _, change in state.changes]
        assert numbers == sorted(numbers) and all(n <= k for n in numbers)
        for piece in state.pieces:  # each change is the merge's own pair, found in the word
            for change in piece.changes:
                assert (change.left, change.right) == tokenizer.merges[change.merge - 1]
                assert piece.text[change.at :].startswith(change.left + change.right)
        if k == 0:
            assert state.changes == []


def test_followed_word_counts_and_absence():
    trainer = zh_trainer()
    follower = Follower(trainer.pattern, trainer.special_tokens)
    table = trainer.word_table()
    follower.follow("孙悟空", table)
    follower.follow("tokenization", table)
    follower.follow("孙悟空", table)  # following again changes nothing
    assert follower.words == ["孙悟空", "tokenization"]
    trainer.run()
    sun, absent = follower.state(trainer)
    assert sun.occurs and sun.pieces[0].count + sun.pieces[0].inside == 7
    assert not absent.occurs and absent.pieces[0].parts  # still segmented
    assert len(follower.cut("tokenization is fun")) == 3  # the pre-tokenizer's cuts: tokenization|␣is|␣fun
    follower.unfollow("孙悟空")
    assert [w.word for w in follower.state(trainer)] == ["tokenization"]


def test_trace_lists_the_trainers_merges_with_their_counts():
    trainer = zh_trainer()
    expected = [(step.count, step.ties, step.changes) for step in zh_trainer().steps(until=120)]
    trainer.run(until=120)
    merges = trainer.merges
    records = replay_records(trainer)
    assert trainer.merges_done == 120 and trainer.merges == merges  # where it was
    assert [(r.left, r.right) for r in records] == merges
    assert [(r.left + r.right) for r in records] == [r.token for r in records]
    assert [(r.count, len(r.ties), len(r.changes)) for r in records] == [(c, len(t), len(ch)) for c, t, ch in expected]
    assert [r.merge for r in records] == list(range(1, 121))
    assert any(r.ties for r in records) and any(r.changes for r in records)
