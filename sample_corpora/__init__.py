"""Small corpora bundled with bpe-tui; ``sample.txt`` is what ``bpe-tui train`` uses by default."""
