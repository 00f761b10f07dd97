"""One text through many tokenizers: the character, byte and word tokenizers before BPE
(``baselines``), the comparison rows (``comparison``) and HF models through ``tokenizers``
(``hf_models``).
"""
