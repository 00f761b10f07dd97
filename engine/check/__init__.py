"""A student's BPE held against the exact one (``bpe-tui check``).

- ``shapes``: what a student's trainer or encoder returned, checked against the shape asked
  for (CS336's ``run_train_bpe`` and ``Tokenizer``), one line saying what was expected;
- ``merges``: their merges and vocabulary against the exact trainer's, the first merge that
  differs and how many after it still agree;
- ``why``: why the rule chose its pair there and not theirs, from the trainer's own
  ``MergeStep``: another count, or a tie and the tie-break rule;
- ``encoding``: their encoder's ids against the engine's on hard texts, the first token that
  differs with its pre-token and merge ranks, and ``decode`` round trips.

Running the student's code (a process of its own, a time limit) is the app's
(``bpe_tui.check``): the engine only compares what came back.
"""
