"""Where a pair lives: the trainer's pair_positions and laid-out words, read back exactly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import PreTokenizer, Trainer
from tests.test_trainer import corpora


def _trainer(text: str, merges: int) -> tuple[Trainer, list[bytes]]:
    counts = PreTokenizer("gpt2", []).count(text)
    trainer = Trainer(counts, 256 + merges)
    trainer.run()
    return trainer, list(counts)


def _starts(trainer: Trainer, words: list[bytes], pair: tuple[int, int]) -> set[int]:
    """Every position where ``pair`` starts now, read off the words' cells."""
    out = set()
    for i in range(len(words)):
        cells = trainer.word_cells(i).cells
        out.update(x.position for x, y in zip(cells, cells[1:], strict=False) if (x.token, y.token) == pair)
    return out


@settings(max_examples=80)
@given(text=corpora, merges=st.integers(0, 30))
def test_cells_are_the_current_segmentation_linked_in_order(text, merges):
    trainer, words = _trainer(text, merges)
    parts = {w.text: w.parts for w in trainer.words(len(words))}
    for i, text_bytes in enumerate(words):
        word = trainer.word_cells(i)
        assert word.text == text_bytes and word.index == i
        assert [trainer.token_bytes(c.token) for c in word.cells] == parts[text_bytes]
        cells = word.cells
        assert cells[0].prev is None and cells[-1].next is None
        for x, y in zip(cells, cells[1:], strict=False):
            assert x.position < y.position and x.next == y.position and y.prev == x.position


@settings(max_examples=80)
@given(text=corpora, merges=st.integers(0, 30), data=st.data())
def test_live_positions_are_exactly_where_the_pair_starts(text, merges, data):
    """Stale positions are exactly the recorded ones the pair no longer starts at, and every
    place it starts is recorded: the live ones, weighted by word count, are pair_counter."""
    trainer, words = _trainer(text, merges)
    counter = trainer.pair_counter
    pairs = sorted(counter) + [data.draw(st.tuples(st.integers(-2, 300), st.integers(-2, 300)))]
    for pair in pairs:
        found = trainer.pair_occurrences(pair, 10**6)
        assert found.pair == pair and found.recorded == len(found.occurrences)
        assert found.live == sum(o.live for o in found.occurrences)
        for o in found.occurrences:
            cells = found.words[o.word].cells
            here = [i for i, c in enumerate(cells) if c.position == o.position]
            starts = bool(here) and here[0] + 1 < len(cells) and (cells[here[0]].token, cells[here[0] + 1].token) == pair
            assert o.live == starts
            assert trainer.word_cells(o.word) == found.words[o.word]
        live = {o.position for o in found.occurrences if o.live}
        assert live == _starts(trainer, words, pair)
        assert sum(found.words[o.word].count for o in found.occurrences if o.live) == counter.get(pair, 0)
        k = data.draw(st.integers(-1, found.recorded + 1))
        assert trainer.pair_occurrences(pair, k).occurrences == found.occurrences[: max(0, k)]


@settings(max_examples=80)
@given(text=corpora, merges=st.integers(0, 30))
def test_a_merge_joins_the_live_positions_left_to_right_and_skips_the_rest(text, merges):
    """Against a plain scan: in each word, the leftmost live position merges, and a live one
    right after it (the second ``a a`` of ``a a a``) is skipped, as is every stale one."""
    trainer, _ = _trainer(text, merges)
    top = trainer.top_pairs(1)
    if not top or trainer.finished:
        return
    before = trainer.pair_occurrences(top[0][0], 10**6)
    step = trainer.step()
    assert step is not None and step.pair == before.pair
    expected: set[int] = set()
    for word in before.words.values():
        i, cells = 0, word.cells
        while i + 1 < len(cells):
            if (cells[i].token, cells[i + 1].token) == step.pair:
                expected.add(cells[i].position)
                i += 2
            else:
                i += 1
    merged = set()
    for o in before.occurrences:
        cell = trainer.word_cells(o.word).cell_at(o.position)
        if cell is not None and cell.token == step.new_id:
            merged.add(o.position)
    assert merged == expected


def test_a_a_a_merges_once_and_the_second_position_goes_stale():
    trainer = Trainer.from_text("aaa", 258)
    a = ord("a")
    before = trainer.pair_occurrences((a, a), 10)
    assert [(o.position, o.live) for o in before.occurrences] == [(1, True), (2, True)]
    trainer.step()
    word = trainer.word_cells(0)
    assert [(c.position, c.token, c.prev, c.next) for c in word.cells] == [(1, 256, None, 3), (3, a, 1, None)]
    assert word.cell_at(2) is None  # merged away into position 1


def test_a_position_goes_stale_when_a_neighbour_merges_first():
    """`` the``: once ``t h`` merges, ``h e`` no longer starts there (h is gone into ``th``)."""
    trainer = Trainer.from_text("th th the hex", 300)
    t, h, e = b"the"
    assert trainer.step().pair == (t, h)
    found = trainer.pair_occurrences((h, e), 10)
    assert found.recorded == 2 and found.live == 1 and found.stale == 1
    assert [(found.words[o.word].text, o.live) for o in found.occurrences] == [(b" the", False), (b" hex", True)]
