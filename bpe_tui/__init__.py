"""bpe-tui: the Textual app and the ``bpe-tui`` command over the headless ``engine``."""
