"""``bpe-tui race``: the recount-everything trainer against the optimized one, each in its
own process.
"""
