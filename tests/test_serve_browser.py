"""The served app in a real browser: headless Chromium opens the page, shows the training
screen, and a key pressed in the page reaches the app. Skips without Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual_serve", reason="textual-serve is not installed (pip install 'bpe-tui[web]')")

from tests.served import browser, chromium, serve  # noqa: E402  (needs aiohttp, from textual-serve)

pytestmark = pytest.mark.skipif(
    chromium() is None, reason="no Chromium on PATH (Debian: apt-get install chromium): the browser check needs one"
)


async def test_the_training_screen_in_chromium(tmp_path: Path) -> None:
    async with serve("train", "--vocab-size", "300", log=tmp_path / "serve.log") as url:
        async with browser() as page:
            await page.open(url)
            # The page repaints in pieces: wait for each thing rather than read one frame.
            for shown in ("next merge: pair_counter top", "corpus: top words now", "merge 0/43"):
                await page.wait_for(shown)
            await page.press("n")
            await page.wait_for("h + e → he")  # the sample's first merge, in the page
            await page.wait_for("merge 1/43")
            await page.press("?")
            await page.wait_for("help: the training screen")
            await page.press("escape")
            await page.wait_for("help: the training screen", gone=True)
            shot = tmp_path / "page.png"
            await page.screenshot(shot)
    assert shot.read_bytes().startswith(b"\x89PNG")
