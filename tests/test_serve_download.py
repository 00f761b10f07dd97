"""Served, ``s`` downloads: headless Chromium, driven by Playwright, opens the training
screen, steps a merge, presses ``s`` and receives the tokenizer as a zip, while the server
writes nothing in its working directory or home. Skips without Chromium or Playwright."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

pytest.importorskip("textual_serve", reason="textual-serve is not installed (pip install 'bpe-tui[web]')")
async_api = pytest.importorskip("playwright.async_api", reason="Playwright is not installed (pip install 'bpe-tui[test]')")

from engine import Tokenizer  # noqa: E402
from tests.served import CHROMIUM_FLAGS, KEEP_TERMINAL, SCREEN_TEXT, chromium, serving  # noqa: E402

pytestmark = pytest.mark.skipif(
    chromium() is None, reason="no Chromium on PATH (Debian: apt-get install chromium): the browser check needs one"
)


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


async def test_s_downloads_the_tokenizer_and_writes_nothing_on_the_server(tmp_path: Path) -> None:
    workdir, home = tmp_path / "server-cwd", tmp_path / "server-home"
    workdir.mkdir()
    home.mkdir()
    (workdir / "tokenizer.json").write_text("the teacher's own", encoding="utf-8")  # a save would replace it
    before = tree(workdir), tree(home)
    async with serving("train", "--vocab-size", "300", log=tmp_path / "serve.log", cwd=workdir, home=home) as (url, _):
        async with async_api.async_playwright() as playwright:
            flags = [flag for flag in CHROMIUM_FLAGS if flag != "--headless"]  # Playwright adds its own
            browser = await playwright.chromium.launch(executable_path=chromium(), args=flags)
            try:
                page = await browser.new_page(accept_downloads=True)
                await page.add_init_script(KEEP_TERMINAL)
                await page.goto(url)

                async def shows(text: str) -> None:
                    await page.wait_for_function(f"() => {SCREEN_TEXT}.includes({text!r})", timeout=30_000)

                await shows("merge 0/43  ⏸ paused")  # the corpus read: keys step it
                await page.evaluate("window.bpeTerminal.focus()")  # keys go to the focused terminal
                await page.keyboard.press("n")
                await shows("merge 1/43")
                async with page.expect_download(timeout=30_000) as started:
                    await page.keyboard.press("s")
                download = await started.value
                await shows("your browser downloads bpe-tokenizer-merge-1.zip")
                assert download.suggested_filename == "bpe-tokenizer-merge-1.zip"
                await download.save_as(tmp_path / "got.zip")
            finally:
                await browser.close()
    with zipfile.ZipFile(tmp_path / "got.zip") as zipped:
        assert sorted(zipped.namelist()) == [f"bpe-tokenizer-merge-1/{n}" for n in ("merges.txt", "tokenizer.json", "vocab.json")]
        zipped.extractall(tmp_path / "got")
    tokenizer = Tokenizer.load(tmp_path / "got" / "bpe-tokenizer-merge-1")
    assert tokenizer.merges == [(b"h", b"e")]  # the sample's first merge, as the page showed
    assert Tokenizer.load(tmp_path / "got" / "bpe-tokenizer-merge-1" / "tokenizer.json").encode("the") == tokenizer.encode("the")
    assert (tree(workdir), tree(home)) == before
