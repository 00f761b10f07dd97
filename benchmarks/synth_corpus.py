"""A corpus for scale runs: as much text as asked, with a web corpus's statistics, the same
bytes for the same seed, written as zstd JSONL shards or streamed to standard output.

    python benchmarks/synth_corpus.py --gb 1 --out /data/synth           # 1 GB as shards
    python benchmarks/synth_corpus.py --gb 1 --stdout | bpe-tui train - --headless --out tok
    python benchmarks/synth_corpus.py --calibrate                        # the fit, measured

Made from the real corpora (``../shared/corpora``): ``en-mix-6m.txt`` and ``zh-xiyouji.txt``.

- **Pre-tokens drawn by rank.** Each document is a run of GPT-2 pre-tokens whose ranks are
  drawn from a Zipf-Mandelbrot law, ``p(r) ∝ (r + Q)^-A``. Rank ``r`` is the real corpus's
  ``r``-th most frequent pre-token (`` the``, ``,``, ``\\n``...; its words, numbers,
  punctuation and spaces) while it has one; past its last, a pre-token made of real subword
  pieces: two or three tokens of a BPE trained on that corpus (`` over`` + ``bear`` +
  ``ing``), capitalized now and then, or one in twenty a number. So merges find the pieces a
  real corpus has, and new distinct pre-tokens keep arriving as the corpus grows.
- **Heaps' law, calibrated.** The number of distinct pre-tokens in ``n`` bytes of text grows
  as ``K n^β``. Measured (``--calibrate``, bpe-tui's GPT-2 pre-tokenizer) on the real
  corpora from 0.1 MB to their whole size: en-mix-6m β = 0.64 (52,376 distinct in 6.6 MB),
  zh-xiyouji β = 0.93 (38,986 in 2.0 MB: its pre-tokens are whole runs of Chinese, nearly
  all new). A Zipf-Mandelbrot law gives β = 1/A; A = 1.6 for English, and Q = 12 sets the
  head (how much of the text `` the`` and ``,`` take). Pre-tokens drawn side by side also
  join into new ones (``it`` + ``The``), so the generated corpus grows a little faster than
  1/A, as web text (more authors, more names) does than one book collection: measured, 97,592
  distinct in 11.8 MB, 454,433 in 101 MB, 2,417,964 in 1 GB, β = 0.72; that law extrapolated
  gives about 13 million at 10 GB and 67 million at 100 GB.
- **A mix of documents.** 94% English, 3% Chinese (zh-xiyouji's pre-tokens by the same law,
  A = 1.2 and Q = 2; past its last, two or three of its runs joined) and 3% code: lines of
  Python with identifiers from the English words, numbers and operators. A document is 40 to
  2,000 pre-tokens (about 180 bytes to 9 KB; a Chinese one a quarter as many, as long).

Made a block of 1,024 documents at a time: their pre-tokens' ranks drawn in one call into
``numpy``, their bytes gathered from one buffer of every kept pre-token (already escaped for
JSON when writing shards) by one index. Two processes write about 53 MB of text a second
as zstd shards (100 GB in 29 minutes on the shared 2-core machine), where bpe-tui counts them
at about 75 MB/s a process: make the shards once and keep them, rather than stream them into
a count, which would wait on them.

Deterministic: shard ``i`` of seed ``s`` is drawn from ``numpy``'s generator seeded with
``(s, i)``, so shards can be made in parallel (``--workers``) and any one made again alone;
the stream is the shards in order. A shard already in the folder is kept, so an interrupted
run goes on where it stopped (give it the same ``--gb``, ``--seed`` and ``--shard-mb``). The
real corpora are counted and the BPEs trained once per process, by bpe-tui itself (about 1 s).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
import regex

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CORPORA = ROOT.parent / "shared" / "corpora"
ENGLISH, CHINESE = CORPORA / "en-mix-6m.txt", CORPORA / "zh-xiyouji.txt"
SHARD_BYTES = 256 << 20
"""Text in one shard (before compression)."""
CACHED = 1 << 20
"""Ranks whose pre-token is made once and kept; rarer ones are made as they are drawn."""
LAW = {"en": (1.6, 12.0), "zh": (1.2, 2.0)}
"""``(A, Q)`` of each language's Zipf-Mandelbrot law."""
MIX = (("en", 0.94), ("zh", 0.03), ("code", 0.03))
"""Each kind of document, and its share of the documents."""
_HAN = regex.compile(r"\p{Han}+")
CODE_WORDS = ("def", "return", "if", "for", "in", "import", "class", "self", "None", "else", "while", "print")
CODE_SYMBOLS = (" = ", "(", ")", ", ", ": ", " + ", " - ", " * ", " == ", "[", "]", ".", " < ", " += ")


def _mix64(x: int) -> int:
    """splitmix64's finalizer: a well-spread 64-bit hash of ``x``."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


class Language:
    """One language's pre-tokens by rank: the real ones by frequency, then made ones."""

    def __init__(self, name: str, path: Path) -> None:
        from engine.corpus.counting import count_inputs
        from engine.corpus.shards import CountSettings
        from engine.train.trainer import train_bpe

        counts, _ = count_inputs([str(path)], CountSettings("gpt2", ()), workers=1)
        self.name = name
        self.real = [word.decode("utf-8") for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]
        vocab, _ = train_bpe(str(path), 4096 if name == "en" else 3000, workers=1)
        text = [token.decode("utf-8", "ignore") for token in vocab.values() if len(token) > 1]
        if name == "en":  # letter pieces: word starts (with their space) and the rest
            self.starts = sorted(t for t in text if t[:1] == " " and t[1:].isalpha())
            self.rest = sorted(t for t in text if t.isalpha() and t.islower())
        else:  # runs of Chinese characters
            self.starts = self.rest = sorted({w for w in self.real if len(w) > 1 and _HAN.fullmatch(w)})
        self.cached = [self.word(r) for r in range(CACHED)]

    def word(self, rank: int) -> str:
        """The pre-token of ``rank`` (0 the most frequent)."""
        if rank < len(self.real):
            return self.real[rank]
        h = _mix64(rank)
        if self.name == "en" and h % 20 == 0:
            return " " + str((h >> 8) % 10 ** (1 + (h >> 40) % 7))
        parts = [self.starts[(h >> 8) % len(self.starts)]]
        for k in range(1 + (h >> 4) % 2):
            parts.append(self.rest[(h >> (20 + 11 * k)) % len(self.rest)])
        made = "".join(parts)
        if self.name == "en" and (h >> 60) % 8 == 0:
            made = made[0] + made[1:].capitalize()
        return made

    def ranks(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` ranks drawn by the language's law (the inverse of its distribution function
        at uniform draws)."""
        a, q = LAW[self.name]
        x = (q + 1) * (1 - rng.random(n)) ** (-1 / (a - 1)) - q
        return np.minimum(x, 2.0**53).astype(np.int64) - 1  # past 2^53 a float skips integers


def _escaped(text: str) -> bytes:
    """``text`` as the inside of a JSON string, UTF-8."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")


class Table:
    """Every kept pre-token of both languages, then a document's opening and end, as one
    buffer of bytes (UTF-8, or ``escaped`` as inside a JSON string) with where each entry
    starts, how long it is and how many bytes of text it stands for. A block's text is
    gathered from it by entry numbers in one pass (``gather``); its other pieces (pre-tokens
    too rare to keep, code) go into the room at its end."""

    def __init__(self, langs: dict[str, Language], escaped: bool) -> None:
        ends = ('{"text": "', '"}\n') if escaped else ("", "\n\n")
        entries = [*langs["en"].cached, *langs["zh"].cached]
        encoded = [_escaped(e) if escaped else e.encode("utf-8") for e in entries] + [e.encode() for e in ends]
        self.escaped = escaped
        self.lens = np.fromiter(map(len, encoded), np.int64, len(encoded))
        self.text = np.fromiter((len(e.encode("utf-8")) for e in [*entries, "", ""]), np.int64, len(encoded))
        self.starts = np.cumsum(self.lens) - self.lens
        self.kept = int(self.lens.sum())
        self.buf = np.empty(self.kept + (16 << 20), np.uint8)
        self.buf[: self.kept] = np.frombuffer(b"".join(encoded), np.uint8)
        self.open, self.end = len(entries), len(entries) + 1

    def gather(self, ids: np.ndarray, others: list[str]) -> tuple[bytes, np.ndarray, np.ndarray]:
        """The bytes of entries ``ids`` one after another, where ``len(lens) + k`` stands for
        ``others[k]``; and each entry's size in bytes as written and in bytes of text."""
        made = [_escaped(o) if self.escaped else o.encode("utf-8") for o in others]
        room = b"".join(made)
        if self.kept + len(room) > len(self.buf):
            self.buf = np.concatenate((self.buf[: self.kept], np.empty(2 * len(room), np.uint8)))
        self.buf[self.kept : self.kept + len(room)] = np.frombuffer(room, np.uint8)
        other = ids >= len(self.lens)
        own = np.where(other, 0, ids)
        lens, starts, text = self.lens[own], self.starts[own], self.text[own]
        if others:
            made_lens = np.fromiter(map(len, made), np.int64, len(made))
            k = ids[other] - len(self.lens)
            lens[other] = made_lens[k]
            starts[other] = self.kept + (np.cumsum(made_lens) - made_lens)[k]
            text[other] = np.fromiter((len(o.encode("utf-8")) for o in others), np.int64, len(others))[k]
        at = np.cumsum(lens) - lens
        return self.buf[np.repeat(starts - at, lens) + np.arange(int(lens.sum()))].tobytes(), lens, text


@cache
def languages(sources: tuple[Path, Path]) -> dict[str, Language]:
    """The two languages, from an English and a Chinese text."""
    return {"en": Language("en", sources[0]), "zh": Language("zh", sources[1])}


@cache
def table(sources: tuple[Path, Path], escaped: bool) -> Table:
    return Table(languages(sources), escaped)


def code(rng: np.random.Generator, words: Language, n: int) -> str:
    """About ``n`` pre-tokens of Python-like lines."""
    lines = []
    for indent, first, second, word, symbol, number, last in rng.integers(0, 1000, (max(1, n // 8), 7)).tolist():
        name = words.real[first].strip() or "x"
        other = words.real[second].strip() or "y"
        lines.append(
            f"{'    ' * (indent % 3)}{CODE_WORDS[word % len(CODE_WORDS)]} {name}{CODE_SYMBOLS[symbol % len(CODE_SYMBOLS)]}"
            f"{other}_{number}{CODE_SYMBOLS[last % len(CODE_SYMBOLS)]}{last}"
        )
    return "\n".join(lines)


DOCUMENTS = 1024
"""Documents drawn at once: one call into ``numpy`` for each of their parts."""
KINDS = [kind for kind, _ in MIX]


def blocks(
    seed: int, shard: int, size: int, escaped: bool = False, sources: tuple[Path, Path] = (ENGLISH, CHINESE)
) -> Iterator[tuple[bytes, int]]:
    """Shard ``shard`` of ``seed``, about ``size`` bytes of text, as blocks of whole documents:
    their bytes as written (a JSONL line each when ``escaped``, else each followed by a blank
    line) and the bytes of text they hold. The same draws either way."""
    rng = np.random.default_rng([seed, shard])
    langs, words = languages(sources), table(sources, escaped)
    en, zh, code_kind = (KINDS.index(k) for k in ("en", "zh", "code"))
    made = 0
    while made < size:
        kinds = rng.choice(len(MIX), DOCUMENTS, p=[share for _, share in MIX])
        lengths = rng.integers(40, 2001, DOCUMENTS)
        # a Chinese pre-token is a whole run of characters: fewer of them for as many bytes; code is one piece
        counts = np.where(kinds == zh, lengths // 4 + 1, np.where(kinds == code_kind, 1, lengths))
        per = counts + 2  # the opening, the pieces, the end
        ends = np.cumsum(per)
        starts = ends - per
        ids = np.empty(int(ends[-1]), np.int64)
        kind_at = np.repeat(kinds, per)
        body = np.ones(len(ids), bool)
        body[starts] = body[ends - 1] = False
        others: list[str] = []
        for kind, offset in ((en, 0), (zh, CACHED)):
            at = body & (kind_at == kind)
            ranks = langs[KINDS[kind]].ranks(rng, int(at.sum()))
            rare = ranks >= CACHED
            made_ids = ranks + offset
            made_ids[rare] = len(words.lens) + len(others) + np.arange(int(rare.sum()))
            others += [langs[KINDS[kind]].word(int(r)) for r in ranks[rare].tolist()]
            ids[at] = made_ids
        at = np.flatnonzero(body & (kind_at == code_kind))
        ids[at] = len(words.lens) + len(others) + np.arange(len(at))
        others += [code(rng, langs["en"], int(n)) for n in lengths[kinds == code_kind].tolist()]
        ids[starts], ids[ends - 1] = words.open, words.end
        out, lens, text = words.gather(ids, others)
        total = made + np.cumsum(np.add.reduceat(text, starts))  # the text made after each document
        last = min(int(np.searchsorted(total, size)), DOCUMENTS - 1)  # the document that fills the shard
        yield out[: int(np.cumsum(lens)[ends[last] - 1])], int(total[last]) - made
        made = int(total[last])


def write_shard(folder: str, seed: int, shard: int, size: int, sources: tuple[Path, Path] = (ENGLISH, CHINESE)) -> int:
    """Write shard ``shard`` as ``shard-NNNNN.jsonl.zst``; the text's bytes, or 0 if it was
    there already (written whole: a shard is renamed into place only once complete)."""
    from backports import zstd  # Python 3.14 has it as compression.zstd

    path = Path(folder) / f"shard-{shard:05d}.jsonl.zst"
    if path.exists():
        return 0
    part = path.with_suffix(".zst.part")
    written = 0
    with zstd.open(part, "wb", level=1) as out:
        for block, text in blocks(seed, shard, size, True, sources):
            out.write(block)
            written += text
    os.replace(part, path)
    return written


def sizes(total: int, shard_bytes: int = SHARD_BYTES) -> list[int]:
    """Each shard's size in text bytes."""
    full, last = divmod(total, shard_bytes)
    return [shard_bytes] * full + ([last] if last else [])


def stream(total: int, seed: int, sources: tuple[Path, Path], shard_bytes: int = SHARD_BYTES) -> None:
    """Write the documents, a blank line after each, to standard output; a
    reader that stops early (``| head``) ends it quietly."""
    out = sys.stdout.buffer
    try:
        for shard, size in enumerate(sizes(total, shard_bytes)):
            for block, _ in blocks(seed, shard, size, False, sources):
                out.write(block)
        out.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        sys.exit(1)


def calibrate() -> None:
    """Heaps' law on the real corpora and on the generated one: distinct pre-tokens at sizes,
    counted by bpe-tui's compiled GPT-2 pre-tokenizer."""
    from engine.corpus.pretokenize import PreTokenizer

    pretok = PreTokenizer("gpt2")

    def heaps(label: str, texts: Iterator[str], marks: list[int]) -> None:
        tally = pretok.new_tally()
        size = 0
        rows = []
        marks = sorted(marks)
        for text in texts:
            pretok.tally(text, tally)
            size += len(text.encode("utf-8"))
            if marks and size >= marks[0]:
                rows.append((size, len(tally)))
                marks = [m for m in marks if m > size]
        if not rows or rows[-1][0] != size:
            rows.append((size, len(tally)))
        (n1, v1), (n2, v2) = rows[0], rows[-1]
        beta = math.log(v2 / v1) / math.log(n2 / n1)
        print(f"{label}: " + ", ".join(f"{n / 1e6:,.1f} MB {v:,}" for n, v in rows) + f"; β = {beta:.2f}", flush=True)

    for path in (ENGLISH, CHINESE):
        text = path.read_text(encoding="utf-8")
        heaps(path.name, (text[i : i + 100_000] for i in range(0, len(text), 100_000)), [100_000 * 2**k for k in range(7)])
    made = (block.decode("utf-8") for shard, size in enumerate(sizes(10**9)) for block, _ in blocks(0, shard, size))
    heaps("generated", made, [10**7, 10**8])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=1.0, help="text to make, in GB (10^9 bytes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="a folder for the zstd JSONL shards")
    parser.add_argument("--stdout", action="store_true", help="stream plain text, a blank line after each document")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes making shards")
    parser.add_argument("--calibrate", action="store_true", help="print Heaps' law, real and generated")
    parser.add_argument("--shard-mb", type=float, default=SHARD_BYTES / 2**20, help="text in one shard, in MiB")
    parser.add_argument("--sources", type=Path, nargs=2, default=(ENGLISH, CHINESE), metavar=("ENGLISH", "CHINESE"), help="the real texts")
    args = parser.parse_args()
    if args.calibrate:
        calibrate()
        return
    total = int(args.gb * 1e9)
    shard_bytes = int(args.shard_mb * 2**20)
    if args.stdout:
        stream(total, args.seed, tuple(args.sources), shard_bytes)
        return
    if args.out is None:
        parser.error("give --out DIR for shards, or --stdout")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        shards = sizes(total, shard_bytes)
        jobs = [pool.submit(write_shard, str(args.out), args.seed, i, size, tuple(args.sources)) for i, size in enumerate(shards)]
        done = [job.result() for job in jobs]
    took = time.perf_counter() - started
    written, kept = sum(done), done.count(0)
    print(
        f"{written / 1e9:.2f} GB of text in {len(jobs) - kept} shards, {took:.1f} s ({written / took / 1e6:.0f} MB/s)"
        + (f"; {kept} shards were there already and kept" if kept else ""),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
