"""Types of the compiled pre-tokenizer (engine/corpus/_pretokenize.c, engine/corpus/_pretokenize_core.c)."""

def pretokens(text: str, pattern: int, /) -> list[str]:
    """The pre-tokens of ``text`` under a family of patterns (its index in
    ``engine.corpus.pretokenize.FAMILIES``)."""

def pretoken_count(text: str | bytes, pattern: int, /) -> int:
    """How many pre-tokens ``pretokens`` would give, without making them (the GIL is released);
    bytes are taken as UTF-8 as they are, to time the scan alone (bytes that are not UTF-8 give a
    count of no meaning)."""

def simd_levels() -> list[str]:
    """The instruction sets the scanner can run on here, ``"scalar"`` first, then any of
    ``"sse2"``, ``"avx2"``, ``"neon"``."""

def simd_level() -> str:
    """The instruction set the scanner runs on: the widest, unless the environment variable
    ``BPE_TUI_PRETOKENIZE_SIMD`` named another when the module was loaded."""

def set_simd_level(name: str, /) -> None:
    """Run this module's scanner on ``name`` (for tests and benchmarks; the encoder and the
    tally keep theirs); ValueError when this machine cannot."""
