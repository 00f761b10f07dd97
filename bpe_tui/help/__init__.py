"""``?`` on any screen and ``bpe-tui explain``: each screen's own help text, rendered."""
