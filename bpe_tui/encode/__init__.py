"""``bpe-tui encode`` and ``decode``: the encode view stepping merge by merge, the headless
print, and a dataset encoded to token ids.
"""
