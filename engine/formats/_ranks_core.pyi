"""Types of the compiled merge recovery (engine/formats/_ranks_core.c)."""

from collections.abc import Sequence

def recover_merges(tokens: Sequence[bytes], /) -> tuple[list[int], list[int], int]:
    """The merges of ``tokens`` listed by rank (``tokens[i]`` has the i-th lowest rank):
    ``(lefts, rights, bad)``, the positions of each token's two parts (-1 for a single
    byte), and the position of the first token that BPE over lower ranks does not make
    (-1: none; the lists then stop before it)."""
