"""Training: the optimized steppable trainer (``trainer``) over pair positions, prev/next links,
the pair counter and the lazy max-heap; what each merge did (``events``); where a pair lives
(``occurrences``); the plain recount-everything trainer (``reference``); and classic ``</w>``
BPE (``classic``, ``classic_reference``). WordPiece, merging by likelihood, has its own room
(``wordpiece``), as has Unigram, a large vocabulary pruned by EM (``unigram``).
"""

ALGORITHMS = ("bpe", "wordpiece", "unigram")
"""What ``--algorithm`` chooses from: byte-level BPE (merges by frequency), WordPiece (by
likelihood), Unigram (a vocabulary pruned by likelihood, SentencePiece's way)."""
