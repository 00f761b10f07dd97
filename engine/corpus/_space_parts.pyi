"""Types of the compiled part counter (engine/corpus/_space_parts.c)."""

def count_space_parts(piece: str, bare: dict[str, int], spaced: dict[str, int], newline_after: int, /) -> None:
    """Add the counts of the piece's parts to ``bare`` and, for parts after a dropped
    space, to ``spaced``; ``newline_after`` 0: no newline cuts, 1: GPT-2's, 2: GPT-4's."""
