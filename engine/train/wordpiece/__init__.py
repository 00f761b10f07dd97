"""WordPiece training (BERT): merges chosen by likelihood, beside BPE's merges by frequency.

The rule and what both trainers share (``rule``), what one merge did (``events``), the
optimized steppable trainer (``trainer``, its state and merge loop in the compiled
``_wordpiece_core``) and the plain recount-everything one it is held to (``reference``).
"""
