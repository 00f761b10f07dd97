"""Tokenizer files: HF ``tokenizer.json``, GPT-2 ``vocab.json`` + ``merges.txt`` and tiktoken
ranks (``tokenizer_files``), GPT-2's printable stand-ins for bytes (``byte_unicode``).
"""
