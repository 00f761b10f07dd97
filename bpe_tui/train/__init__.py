"""``bpe-tui train``: the training screen, its panels, the trainer's process behind it, and
the headless run.
"""
