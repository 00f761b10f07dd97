"""SentencePiece ``.model`` files in the encode views, driven through Pilot: a Unigram model
walks through each word's lattice, a BPE model through its merge rounds, both ending on
``sentencepiece``'s ids; ``bpe-tui encode --model X.model`` opens the view of the model's
kind; SVG snapshots at 80x24 and 160x48. The models are ``tests/fixtures/spm-*-400.model``."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from bpe_tui.app import BpeApp, encode_screen
from bpe_tui.common.token_spans import TokenSpans
from bpe_tui.encode.screen import EncodeScreen
from bpe_tui.encode.unigram_screen import UnigramEncodeScreen
from bpe_tui.encode.widgets.lattice_pieces import LatticePieces
from bpe_tui.encode.widgets.pair_ranks import PairRanks
from engine import Tokenizer
from engine.encode.sentencepiece_model import SentencePieceModel
from engine.encode.sentencepiece_steps import SentencePieceLattices, SentencePieceMerges, sentencepiece_steps
from tests.conftest import fixture_file
from tests.test_encode_screen import ids_on_screen, on_screen
from tests.test_unigram_screen import shown

pytest.importorskip("sentencepiece")

TEXT = "Hello ｆｕｌｌ world<sep>孙悟空"
"""Full-width letters NFKC makes plain, a user-defined symbol, and Chinese no piece holds
(their UTF-8 bytes, with byte_fallback)."""


def model(kind: str) -> SentencePieceModel:
    opened = Tokenizer.load(fixture_file(f"spm-{kind}-400.model"))
    assert isinstance(opened, SentencePieceModel)
    return opened


def status(app: BpeApp) -> str:
    return str(app.screen.query_one("#status", Static).render())


def shown_ids(app: BpeApp) -> list[int]:
    return ids_on_screen(app.screen.query_one(TokenSpans))


async def test_a_unigram_model_walks_its_lattices_to_sentencepieces_ids() -> None:
    unigram = model("unigram")
    view = encode_screen(sentencepiece_steps(unigram), TEXT)
    assert isinstance(view, UnigramEncodeScreen)
    app = BpeApp(view)
    async with app.run_test(size=(120, 48)) as pilot:
        walk = view.walk
        assert [lattice.word for lattice in walk.lattices] == ["▁Hello", "▁full", "▁world<sep>孙悟空"]  # NFKC: ｆｕｌｌ is full
        await pilot.press("w")
        assert "“▁Hello”: path" in status(app)
        lines = shown(view.query_one(LatticePieces)).splitlines()
        hello = walk.lattices[0]
        assert [line.split()[1] for line in lines if "★ path" in line] == [hello.nodes[k].piece for k in hello.best]
        await pilot.press("e")
        assert shown_ids(app) == walk.ids == unigram.encode(TEXT)
        sep = unigram.special_ids["<sep>"]
        assert sep in walk.ids and unigram.token(walk.ids[-1]).startswith("<0x")  # 空's last byte


async def test_a_bpe_model_walks_its_merges_to_sentencepieces_ids() -> None:
    bpe = model("bpe")
    view = encode_screen(sentencepiece_steps(bpe), TEXT)
    assert isinstance(view, EncodeScreen)
    app = BpeApp(view)
    async with app.run_test(size=(120, 48)) as pilot:
        walk = view.walk
        assert [trace.text for trace in walk.traces] == ["▁Hello", "▁ｆｕｌｌ", "▁world<sep>孙悟空"]  # identity: kept as typed
        first = walk.traces[0].steps[0]
        assert [bpe.token(i) for i in first.parts] == list("▁Hello")
        pairs = on_screen(view.query_one(PairRanks).query_one("#pairs-table"))
        assert first.chosen is not None and any("◀ lowest" in line for line in pairs)
        await pilot.press("n")
        left, right = (bpe.token(first.parts[first.chosen + d]) for d in (0, 1))
        assert [bpe.token(i) for i in walk.traces[0].steps[1].parts][first.chosen] == left + right
        await pilot.press("e")
        assert "done" in status(app) and shown_ids(app) == walk.ids == bpe.encode(TEXT)


def test_the_command_opens_the_view_of_the_models_kind() -> None:
    """``encode --model X.model`` without ``--headless`` gets the steps of the model's kind."""
    assert isinstance(sentencepiece_steps(model("unigram")), SentencePieceLattices)
    assert isinstance(sentencepiece_steps(model("bpe")), SentencePieceMerges)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_unigram_model_inside_a_word(snap_compare, size) -> None:
    """Inside ▁full (typed full-width), three positions filled."""

    async def run_before(pilot) -> None:
        await pilot.press("w", "n", "n", "n")

    assert snap_compare(BpeApp(encode_screen(sentencepiece_steps(model("unigram")), TEXT)), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_bpe_model_after_three_merges(snap_compare, size) -> None:
    assert snap_compare(BpeApp(encode_screen(sentencepiece_steps(model("bpe")), TEXT)), press=["n", "n", "n"], terminal_size=size)
