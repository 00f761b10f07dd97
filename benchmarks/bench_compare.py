"""Does the compare view stay responsive on a 10 KB text? Textual's Pilot drives the app.

The text is the first 10 KB of ../shared/fixtures/corpus.en (or --file). Rows: character,
byte, word and BPE from the bundled sample, GPT-2 (from ../shared/fixtures), and WordPiece
and Unigram models trained on the sample with Hugging Face tokenizers (when installed).

- engine: ``compare()`` alone, every row tokenized and marked against the reference;
- re-tokenize: what the view does once typing pauses (tokenize in a thread, then lay out
  the rows), until the screen has been repainted with them, at 200x50 and 80x24;
- key to screen: a character typed into the text (the rows wait for the pause), and a
  cursor move (every row underlines and scrolls to the token under the cursor).

    python benchmarks/bench_compare.py [--file FILE] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_tui import Painted, send  # noqa: E402

from bpe_tui.app import BpeApp  # noqa: E402
from bpe_tui.compare.screen import CompareScreen  # noqa: E402
from engine import Tokenizer  # noqa: E402
from engine.compare.baselines import SpanTokenizer  # noqa: E402
from engine.compare.comparison import BpeSpans, compare, corpus_tokenizers, load_span_tokenizer  # noqa: E402

SAMPLE = ROOT / "sample_corpora" / "sample.txt"
FIXTURES = ROOT.parent / "shared" / "fixtures"


def rows(scratch: Path) -> list[SpanTokenizer]:
    out = corpus_tokenizers(SAMPLE)
    if (FIXTURES / "gpt2_vocab.json").exists():
        out.append(BpeSpans(Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt"), "gpt2"))
    try:
        import tokenizers as hf
    except ImportError:
        return out
    for model, trainer, pre in (
        (
            hf.models.WordPiece(unk_token="[UNK]"),
            hf.trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[UNK]"]),
            hf.pre_tokenizers.BertPreTokenizer(),
        ),
        (
            hf.models.Unigram(),
            hf.trainers.UnigramTrainer(vocab_size=500, special_tokens=["<unk>"], unk_token="<unk>"),
            hf.pre_tokenizers.Metaspace(),
        ),
    ):
        tok = hf.Tokenizer(model)
        tok.pre_tokenizer = pre
        tok.train([str(SAMPLE)], trainer)
        path = scratch / f"{type(model).__name__.lower()}.json"
        tok.save(str(path))
        out.append(load_span_tokenizer(path))
    return out


def median_ms(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    return f"median {statistics.median(ms):.0f} ms (min {ms[0]:.0f}, max {ms[-1]:.0f})"


async def in_app(tokenizers: list[SpanTokenizer], text: str, size: tuple[int, int], rounds: int) -> dict[str, list[float]]:
    screen = CompareScreen(tokenizers, text, reference=len(tokenizers) - 1)
    app = BpeApp(screen)
    out: dict[str, list[float]] = {"re-tokenize": [], "key typed": [], "cursor moved": []}
    async with app.run_test(size=size) as pilot:
        painted = Painted(app)
        await pilot.pause()
        for _ in range(rounds):
            before = screen.rows
            started = time.perf_counter()
            screen.retokenize(screen.text, screen.reference)
            while screen.rows is before:  # polled coarsely: a busy poll would take the GIL from the thread
                await asyncio.sleep(0.005)
            out["re-tokenize"].append(await painted.after(started, lambda: True))
        for _ in range(rounds):
            out["key typed"].append(await painted.after(send(app, "x", "x"), lambda: True))
            await asyncio.sleep(0.3)  # the rows re-tokenize after the pause
            out["cursor moved"].append(await painted.after(send(app, "right"), lambda: True))
            await asyncio.sleep(0.05)
        app.exit()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=FIXTURES / "corpus.en")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if not args.file.exists():
        print(f"skipped: {args.file} not found")
        return 0
    text = args.file.read_bytes()[:10240].decode("utf-8", errors="ignore")
    with tempfile.TemporaryDirectory() as scratch:
        tokenizers = rows(Path(scratch))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    names = ", ".join(t.name for t in tokenizers)
    print(f"{len(text.encode()):,} bytes of {args.file.name}; {len(tokenizers)} rows ({names}); load average {load}")
    times = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        compare(text, tokenizers, len(tokenizers) - 1)
        times.append(time.perf_counter() - started)
    print(f"engine compare(), all rows      {median_ms(times)}")
    for size in ((200, 50), (80, 24)):
        for name, measured in asyncio.run(in_app(tokenizers, text, size, args.rounds)).items():
            print(f"app {size[0]}x{size[1]} {name:<20} {median_ms(measured)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
