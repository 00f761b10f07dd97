"""Write ``engine/corpus/bert_punctuation.py``: the characters ``BertPreTokenizer`` isolates.

    python -m engine.corpus.gen_bert_punctuation      # needs Hugging Face ``tokenizers``

Hugging Face ``tokenizers`` calls a character punctuation when it is ASCII punctuation or in
Unicode's ``P*`` categories as its own tables have them, which are older than the ``regex``
module's (U+2E5D is punctuation in one, not the other; U+166D in the other, not the one). To
cut words exactly as it does, the set is asked of ``BertPreTokenizer`` itself, code point by
code point, and written down as ranges. tests/test_wordpiece_files.py checks the committed
table against the installed ``tokenizers``.
"""

from __future__ import annotations

import sys
from pathlib import Path

TABLE = Path(__file__).with_name("bert_punctuation.py")


def punctuation_ranges() -> list[tuple[int, int]]:
    """The code points ``BertPreTokenizer`` cuts out on their own, as inclusive ranges."""
    from tokenizers.pre_tokenizers import BertPreTokenizer

    split = BertPreTokenizer().pre_tokenize_str
    ranges: list[tuple[int, int]] = []
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c <= 0xDFFF or len(split(f"a{chr(c)}b")) != 3:
            continue
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return ranges


def table_text(ranges: list[tuple[int, int]]) -> str:
    body = "".join(f"    (0x{a:04X}, 0x{b:04X}),\n" for a, b in ranges)
    return (
        '"""The characters Hugging Face\'s ``BertPreTokenizer`` isolates as punctuation, as ranges of\n'
        'code points: written by ``python -m engine.corpus.gen_bert_punctuation``, not by hand."""\n\n'
        f"PUNCTUATION_RANGES: tuple[tuple[int, int], ...] = (\n{body})\n"
    )


if __name__ == "__main__":
    TABLE.write_text(table_text(punctuation_ranges()), encoding="utf-8")
    print(f"wrote {TABLE}")
