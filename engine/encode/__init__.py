"""Encoding with a trained vocabulary: the rank-based encoder, decoding, streaming and
step-by-step encodes (``tokenizer``), and whole datasets to token-id files (``dataset``).
"""
