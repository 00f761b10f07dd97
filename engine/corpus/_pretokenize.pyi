"""Types of the compiled pre-tokenizer (engine/corpus/_pretokenize.c, engine/corpus/_pretokenize_core.c)."""

def pretokens(text: str, pattern: int, /) -> list[str]:
    """The pre-tokens of ``text`` under a family of patterns (its index in
    ``engine.corpus.pretokenize.FAMILIES``)."""

def pretoken_count(text: str, pattern: int, /) -> int:
    """How many pre-tokens ``pretokens`` would give, without making them (the GIL is released)."""
