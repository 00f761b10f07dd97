"""``bpe-tui compare``: one text cut by many tokenizers, side by side."""
