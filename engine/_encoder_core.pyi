"""Types of the compiled encoder merge loop (engine/_encoder_core.c)."""

class MergeRanks:
    """A tokenizer's merge ranks, for merging pre-tokens."""

    def __init__(self, byte_ids: list[int], rank_of: dict[tuple[int, int], int], merged: list[int], /) -> None: ...
    def ids(self, piece: bytes, /) -> str:
        """The ids of one pre-token's bytes, each as a code point."""
