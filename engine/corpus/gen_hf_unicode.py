"""Write ``engine/corpus/hf_unicode.py``: the character tables of Hugging Face ``tokenizers``.

    python -m engine.corpus.gen_hf_unicode      # needs Hugging Face ``tokenizers``

``tokenizers`` decides what punctuation is and how a character lowercases by Unicode tables
of its own, of another version than Python's and the ``regex`` module's: U+2E5D is
punctuation in one and not the other, U+166D the other way round; U+1C89 lowercases in one
only. To cut and lower words exactly as it does, both are asked of ``tokenizers`` itself,
code point by code point, and written down:

- the characters ``BertPreTokenizer`` isolates, as ranges;
- what its ``Lowercase`` normalizer turns each character into, where that is not the
  character itself.

tests/test_wordpiece_files.py checks the committed file against the installed ``tokenizers``.
"""

from __future__ import annotations

import sys
from pathlib import Path

TABLE = Path(__file__).with_name("hf_unicode.py")


def _code_points() -> list[str]:
    return [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


def punctuation_ranges() -> list[tuple[int, int]]:
    """The code points ``BertPreTokenizer`` cuts out on their own, as inclusive ranges."""
    from tokenizers.pre_tokenizers import BertPreTokenizer

    split = BertPreTokenizer().pre_tokenize_str
    ranges: list[tuple[int, int]] = []
    for c in _code_points():
        if len(split(f"a{c}b")) != 3:
            continue
        if ranges and ranges[-1][1] == ord(c) - 1:
            ranges[-1] = (ranges[-1][0], ord(c))
        else:
            ranges.append((ord(c), ord(c)))
    return ranges


def lowercase_map() -> list[tuple[int, tuple[int, ...]]]:
    """Each code point the ``Lowercase`` normalizer changes, and the code points it becomes."""
    from tokenizers.normalizers import Lowercase

    lower = Lowercase().normalize_str
    return [(ord(c), tuple(map(ord, lowered))) for c in _code_points() if (lowered := lower(c)) != c]


def table_text(ranges: list[tuple[int, int]], lowered: list[tuple[int, tuple[int, ...]]]) -> str:
    spans = "".join(f"    (0x{a:04X}, 0x{b:04X}),\n" for a, b in ranges)
    lowers = "".join(f"    (0x{c:04X}, ({', '.join(f'0x{x:04X}' for x in to)}{',' if len(to) == 1 else ''})),\n" for c, to in lowered)
    return (
        '"""Hugging Face ``tokenizers``\' own character tables, as code points: written by\n'
        '``python -m engine.corpus.gen_hf_unicode``, not by hand."""\n\n'
        f"PUNCTUATION_RANGES: tuple[tuple[int, int], ...] = (\n{spans})\n"
        '"""What ``BertPreTokenizer`` isolates as punctuation."""\n\n'
        f"LOWERCASE: tuple[tuple[int, tuple[int, ...]], ...] = (\n{lowers})\n"
        '"""What the ``Lowercase`` normalizer turns a character into, where that is not itself."""\n'
    )


if __name__ == "__main__":
    TABLE.write_text(table_text(punctuation_ranges(), lowercase_map()), encoding="utf-8")
    print(f"wrote {TABLE}")
