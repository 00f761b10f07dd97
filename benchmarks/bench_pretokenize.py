"""The compiled pre-tokenizer alone: MB/s of each family on each instruction set, beside ``regex``.

The scanner (``engine/corpus/_pretokenize_core.c``, 64 bytes at a time through
``_pretokenize_simd.h``) is timed by ``pretoken_count`` over the corpus's UTF-8 bytes: the
pre-tokens' ends found, nothing made of them, no str converted. ``regex`` is timed on the same
text as ``pattern.findall(text)`` under the family's pattern string (a list of str made,
as any use of it makes one), for reference. Fastest of ``--rounds``, one thread, in this
process; the machine's load is printed first (``machine.py``). ``--accented`` adds en-mix-6m
with 8% of some letters accented (a text of Latin-1 letters between ASCII, as German or French
is), made the same every run.

    python benchmarks/bench_pretokenize.py
    python benchmarks/bench_pretokenize.py --corpus FILE --rounds 5 --no-regex
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import regex  # noqa: E402
from machine import machine  # noqa: E402 - this script's folder is on sys.path

from engine.corpus import _pretokenize  # noqa: E402
from engine.corpus.pretokenize import FAMILIES, KNOWN_PATTERNS  # noqa: E402

ACCENTS = str.maketrans("aeoucsAE", "äéöüçßÄÉ")


def accented(text: str) -> str:
    """``text`` with 8% of its a, e, o, u, c, s, A and E accented (ä é ö ü ç ß Ä É), by a seeded draw."""
    draw = random.Random(3)
    return "".join(c.translate(ACCENTS) if draw.random() < 0.08 else c for c in text)


CORPORA = [ROOT.parent / "shared" / "corpora" / "en-mix-6m.txt", ROOT.parent / "shared" / "corpora" / "zh-xiyouji.txt"]


def fastest(rounds: int, run: Callable[[], object]) -> float:
    """The fewest seconds ``run()`` took in ``rounds`` tries."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", help="a UTF-8 text file (repeatable; default en-mix-6m and zh-xiyouji)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-regex", action="store_true", help="leave out the regex module's column")
    parser.add_argument("--accented", action="store_true", help="also en-mix-6m with 8%% of some letters accented")
    args = parser.parse_args()
    levels = _pretokenize.simd_levels()
    strings = {family: next(s for s, f in KNOWN_PATTERNS.items() if f == family) for family in FAMILIES}
    print(machine())
    print("| corpus | family | " + " | ".join(levels) + ("" if args.no_regex else " | regex") + " | widest / scalar |")
    print("| --- | --- | " + " | ".join("---:" for _ in levels) + ("" if args.no_regex else " | ---:") + " | ---: |")
    default = _pretokenize.simd_level()
    texts = [(path.stem, path.read_text(encoding="utf-8")) for path in map(Path, args.corpus or CORPORA)]
    if args.accented:
        texts.append(("en-mix-6m accented", accented(CORPORA[0].read_text(encoding="utf-8"))))
    for name, text in texts:
        data = text.encode("utf-8")
        mb = len(data) / 1e6
        for number, family in enumerate(FAMILIES):
            speeds = []
            for level in levels:
                _pretokenize.set_simd_level(level)
                speeds.append(mb / fastest(args.rounds, partial(_pretokenize.pretoken_count, data, number)))
            cells = [f"{s:,.0f}" for s in speeds]
            if not args.no_regex:
                pattern = regex.compile(strings[family])
                cells.append(f"{mb / fastest(min(args.rounds, 2), partial(pattern.findall, text)):,.1f}")
            print(f"| {name} | {family} | " + " | ".join(cells) + f" | {speeds[-1] / speeds[0]:.2f}x |")
    _pretokenize.set_simd_level(default)
    print("MB/s of UTF-8 text, fastest of", args.rounds, "rounds (regex: of", min(args.rounds, 2), ")")


if __name__ == "__main__":
    main()
