"""GPT-2, cl100k_base and o200k_base for every encoder the benchmarks compare, from the shared fixtures.

cl100k_base and o200k_base are the published rank files, read as ``Tokenizer.from_tiktoken``
reads them (merges recovered from the ranks, in C); GPT-2 is its vocab.json and merges.txt.
Each is read once a process, and every tokenizer is then made afresh from what was read, so
its caches start empty. bpe-tui is given tiktoken's pattern strings, not its names for them,
so the choice of the compiled pre-tokenizer by the string is what runs. The benchmarks check
every peer's ids against bpe-tui's on the text they time.
"""

from __future__ import annotations

import base64
import os
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine import Tokenizer  # noqa: E402
from engine.corpus.pretokenize import CL100K_PATTERN, O200K_PATTERN  # noqa: E402
from engine.formats.rank_files import read_rank_file  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures"

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
"""tiktoken's r50k/gpt2 string (``tiktoken_ext/openai_public.py``)."""


@dataclass(frozen=True)
class Model:
    name: str
    pattern: str
    special_tokens: dict[str, int]
    gigatoken_scheme: str
    """gigatoken names its pre-tokenizers rather than taking a regex."""


MODELS = {
    "gpt2": Model("gpt2", GPT2_PATTERN, {"<|endoftext|>": 50256}, "gpt2"),
    "cl100k": Model(
        "cl100k",
        CL100K_PATTERN,
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
        "gpt4",
    ),
    "o200k": Model("o200k", O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, "o200k"),
}


@cache
def read(name: str) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]], Any]:
    """What the model's files hold: every id's bytes (the special tokens' too), the merges,
    and the merges' ids where the rank file gives them."""
    if name == "gpt2":
        gpt2 = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt")
        return gpt2.vocab, gpt2.merges, None
    r = read_rank_file(FIXTURES / f"{name}_base.tiktoken.gz")
    return r.vocab, r.merges, r.merge_ids


def ranks(name: str) -> dict[bytes, int]:
    """The model's mergeable ranks (token bytes -> id), special tokens excluded."""
    specials = set(MODELS[name].special_tokens.values())
    return {token: i for i, token in read(name)[0].items() if i not in specials}


def tiktoken_file(name: str) -> Path:
    """The ranks as a plain ``.tiktoken`` file (what gigatoken and fastokens load), written once."""
    path = Path(tempfile.gettempdir()) / "bpe-tui-bench" / f"{name}_base.tiktoken"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = (base64.b64encode(token) + b" " + str(rank).encode() for token, rank in sorted(ranks(name).items(), key=lambda kv: kv[1]))
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(b"\n".join(lines) + b"\n")
        tmp.replace(path)
    return path


def bpe_tui(name: str) -> Tokenizer:
    """A fresh bpe-tui tokenizer (empty caches), as ``Tokenizer.from_tiktoken`` makes it:
    ``direct``, a pre-token that is an entry is that entry, as in tiktoken."""
    vocab, merges, merge_ids = read(name)
    model = MODELS[name]
    tok = Tokenizer(vocab, merges, list(model.special_tokens), model.pattern, merge_ids=merge_ids)
    tok.direct = True
    return tok


def tiktoken_encoding(name: str) -> Any:
    import tiktoken

    model = MODELS[name]
    return tiktoken.Encoding(name, pat_str=model.pattern, mergeable_ranks=ranks(name), special_tokens=model.special_tokens)


def gigatoken_tokenizer(name: str) -> Any:
    import gigatoken

    model = MODELS[name]
    return gigatoken.Tokenizer.from_tiktoken(tiktoken_file(name), pretokenizer=model.gigatoken_scheme, special_tokens=model.special_tokens)


def fastokens_tokenizer(name: str) -> Any:
    import fastokens

    model = MODELS[name]
    return fastokens.Tokenizer.from_tiktoken(str(tiktoken_file(name)), pattern=model.pattern, special_tokens=model.special_tokens)
