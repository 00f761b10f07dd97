"""Unigram training (SentencePiece's ``model_type=unigram``): a large vocabulary pruned by EM.

The rules both trainers follow (``rule``), what one round did (``events``), the optimized
steppable trainer (``trainer``, its E-step, Viterbi and losses in the compiled
``_unigram_core``) and the plain one that enumerates every segmentation (``reference``).
"""
