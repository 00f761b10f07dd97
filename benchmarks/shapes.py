"""Corpora of other shapes than prose, generated deterministically: the benchmarks train on them
beside ``en-mix-6m.txt`` and ``zh-xiyouji.txt``.

- ``dna``: a Markov chain over ``ACGT`` (each letter drawn given the 6 before it, from fixed
  random weights) in lines of 1,000 letters, as genome tokenizers (DNABERT-2) train BPE on:
  under the GPT-2 pattern each line is one pre-token of 1,000 bytes.
- ``one-word``: the words of ``en-mix-6m.txt`` drawn by their frequency and written with no
  space or punctuation between them, in one line: a single pre-token, as minified code, URLs,
  base64 or languages written without spaces make.
- ``code``: the project's own ``.py`` and ``.c`` files, in sorted order, repeated.

    python benchmarks/shapes.py dna 5e6 /tmp/dna.txt    # write one
"""

from __future__ import annotations

import argparse
import random
import re
from bisect import bisect
from collections import Counter
from itertools import accumulate, product
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EN_MIX = ROOT.parent / "shared" / "corpora" / "en-mix-6m.txt"
LINE = 1000
ORDER = 6


def dna(size: int, seed: int = 4) -> str:
    """About ``size`` bytes of DNA-like text: lines of ``LINE`` letters and a newline."""
    rnd = random.Random(seed)
    # Skewed weights, so some contexts strongly prefer a letter: repeats and motifs to merge.
    table = {ctx: list(accumulate(rnd.random() ** 3 for _ in "ACGT")) for ctx in map("".join, product("ACGT", repeat=ORDER))}
    draw = rnd.random
    lines = []
    ctx = "ACGTAC"
    for _ in range(max(1, size // (LINE + 1))):
        line = []
        for _ in range(LINE):
            weights = table[ctx]
            letter = "ACGT"[min(3, bisect(weights, draw() * weights[-1]))]
            line.append(letter)
            ctx = ctx[1:] + letter
        lines.append("".join(line))
    return "\n".join(lines) + "\n"


def one_word(size: int, seed: int = 1) -> str:
    """``size`` ASCII letters: words of English drawn by frequency, with nothing between them."""
    counts = Counter(re.findall(r"[A-Za-z]+", EN_MIX.read_text(encoding="utf-8")))
    words = list(counts)
    cumulative = list(accumulate(counts[w] for w in words))
    rnd = random.Random(seed)
    mean = sum(len(w) * counts[w] for w in words) / cumulative[-1]
    out: list[str] = []
    have = 0
    while have < size:
        batch = rnd.choices(words, cum_weights=cumulative, k=int((size - have) / mean) + 16)
        text = "".join(batch)
        out.append(text)
        have += len(text)
    return "".join(out)[:size]


def code(size: int) -> str:
    """The project's ``.py`` and ``.c`` files in sorted order, repeated to ``size`` bytes (or a
    little less: whole files only, at least one round)."""
    files = sorted(p for p in ROOT.rglob("*") if p.suffix in (".py", ".c") and p.is_file() and ".git" not in p.parts)
    texts = [p.read_text(encoding="utf-8") for p in files]
    out: list[str] = []
    have = 0
    while not out or have < size:
        for text in texts:
            if out and have + len(text.encode()) > size:
                return "".join(out)
            out.append(text)
            have += len(text.encode())
    return "".join(out)


SHAPES = {"dna": dna, "one-word": one_word, "code": code}


def write(shape: str, size: int, path: Path) -> Path:
    """Write ``shape`` of about ``size`` bytes to ``path`` (kept if it is there already)."""
    if not path.exists():
        tmp = path.with_suffix(".part")
        tmp.write_text(SHAPES[shape](size), encoding="utf-8")
        tmp.rename(path)
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shape", choices=list(SHAPES))
    parser.add_argument("size", type=float, help="bytes, e.g. 5e6")
    parser.add_argument("path", type=Path)
    args = parser.parse_args()
    write(args.shape, int(args.size), args.path)
