"""Encode and decode throughput with GPT-2's files, against tiktoken and HF tokenizers.

    python benchmarks/bench_encode.py [--rounds 3] [--corpus ../shared/corpora/en-mix-6m.txt]

Single thread. Every round builds a fresh tokenizer, then times a cold encode (empty cache),
a warm encode (same text again) and a decode; each encode is given the text as a new str. Peers run in the same rounds, in an order that
turns round by round, so their ratios hold even on a busy machine. Reports the median MB/s of
UTF-8 input (decode: of output) and the ratio to tiktoken's, of wall time and of CPU time.

Then where bpe-tui's time goes, in CPU milliseconds (medians): pre-tokenizing (the compiled
pattern scan alone, ``pretoken_count``), output (making the list of ids, timed as copying
it), the cache (a warm encode less those two: hashing, looking up and copying each
pre-token's ids) and the merge loop (a cold encode less a warm one: merging or finding in
the vocabulary each distinct pre-token, and filling the cache).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAYON_NUM_THREADS", "1")  # HF tokenizers: one thread

from engine import Tokenizer  # noqa: E402
from engine.corpus._pretokenize import pretoken_count  # noqa: E402

SHARED = ROOT.parent / "shared"
GPT2_VOCAB = SHARED / "fixtures/gpt2_vocab.json"
GPT2_MERGES = SHARED / "fixtures/gpt2_merges.txt"


def peers(tok: Tokenizer) -> dict[str, Callable[[], tuple[Callable[[str], list[int]], Callable[[list[int]], str]]]]:
    """Name -> factory of a fresh (encode, decode) pair."""
    out = {}

    def ours(direct: bool) -> Callable[[], tuple[Callable[[str], list[int]], Callable[[list[int]], str]]]:
        def make() -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
            fresh = Tokenizer.from_files(GPT2_VOCAB, GPT2_MERGES)
            fresh.direct = fresh.direct and direct
            return fresh.encode, fresh.decode

        return make

    # Loading GPT-2's files proves that every entry encodes to itself, so a pre-token that is
    # an entry skips the merge loop; "merging" turns that off.
    out["bpe-tui"] = ours(True)
    out["bpe-tui merging"] = ours(False)
    try:
        import tiktoken

        ranks = {t: i for i, t in tok.vocab.items() if i not in tok.special_ids.values()}

        def tt() -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
            enc = tiktoken.Encoding("gpt2", pat_str=tok.pretokenizer.pattern, mergeable_ranks=ranks, special_tokens=tok.special_ids)
            return (lambda s: enc.encode(s, allowed_special="all")), enc.decode

        out["tiktoken"] = tt
    except ImportError:
        pass
    try:
        import tokenizers

        def hf() -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
            model = tokenizers.models.BPE.from_file(str(GPT2_VOCAB), str(GPT2_MERGES))
            t = tokenizers.Tokenizer(model)
            t.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
            t.decoder = tokenizers.decoders.ByteLevel()
            t.add_special_tokens(list(tok.special_ids))
            return (lambda s: t.encode(s).ids), (lambda ids: t.decode(ids, skip_special_tokens=False))

        out["hf-tokenizers"] = hf
    except ImportError:
        pass
    return out


def anew(text: str) -> str:
    """An equal str that no encoder has read: one read through PyO3 (tiktoken, HF tokenizers)
    keeps its UTF-8 in it, and an encode of that very object again skips making it, as no
    new text does."""
    return text.encode("utf-8").decode("utf-8")


def timed(f: Callable[[], object]) -> tuple[tuple[float, float], object]:
    """``((wall seconds, CPU seconds), f())``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = f()
    return (time.perf_counter() - wall, time.process_time() - cpu), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpora/en-mix-6m.txt")
    args = parser.parse_args()
    text = args.corpus.read_text(encoding="utf-8")
    mb = len(text.encode("utf-8")) / 1e6
    tok = Tokenizer.from_files(GPT2_VOCAB, GPT2_MERGES)
    contenders = peers(tok)
    times: dict[str, dict[str, list[tuple[float, float]]]] = {name: {"cold": [], "warm": [], "decode": []} for name in contenders}
    reference = None
    stages: dict[str, list[float]] = {"scan": [], "output": []}
    names = list(contenders)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # each in turn goes first
            encode, decode = contenders[name]()
            cold, ids = timed(partial(encode, anew(text)))
            warm, _ = timed(partial(encode, anew(text)))
            dec, back = timed(partial(decode, ids))
            reference = reference or ids
            assert ids == reference and back == text, f"{name} disagrees"
            for key, t in (("cold", cold), ("warm", warm), ("decode", dec)):
                times[name][key].append(t)
            if name == "bpe-tui":
                stages["scan"].append(timed(lambda: pretoken_count(text, 0))[0][1])
                stages["output"].append(timed(ids.copy)[0][1])
    print(f"{args.corpus.name}: {mb:.2f} MB, {args.rounds} rounds, median MB/s (ratio to tiktoken: wall, CPU)")

    def medians(row: dict[str, list[tuple[float, float]]]) -> dict[str, tuple[float, float]]:
        return {key: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t)) for key, t in row.items()}

    base = medians(times["tiktoken"]) if "tiktoken" in times else {}
    for name, row in times.items():
        cells = []
        for key, (wall, cpu) in medians(row).items():
            ratio = f" ({base[key][0] / wall:.2f}x, {base[key][1] / cpu:.2f}x)" if base else ""
            cells.append(f"{key} {mb / wall:6.2f}{ratio}")
        print(f"  {name:15} " + "   ".join(cells))
    cpu = {key: statistics.median(c for _, c in t) for key, t in times["bpe-tui"].items()}
    scan, output = (statistics.median(stages[key]) for key in ("scan", "output"))
    parts = {
        "pre-tokenizing": scan,
        "cache": cpu["warm"] - scan - output,
        "merge loop": cpu["cold"] - cpu["warm"],
        "output": output,
    }
    print(f"bpe-tui cold encode, {cpu['cold'] * 1e3:.0f} ms CPU: " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in parts.items()))


if __name__ == "__main__":
    main()
