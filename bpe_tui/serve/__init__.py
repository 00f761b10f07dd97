"""``bpe-tui serve``: the app in web browsers, one process per tab."""
