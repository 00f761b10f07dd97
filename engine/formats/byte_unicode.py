"""GPT-2's printable stand-ins for bytes, used by ``vocab.json``, ``merges.txt`` and HF files.

Printable Latin-1 bytes stand for themselves; the rest (space, control bytes, ...) are
shifted to U+0100 and up, so a space is ``Ġ`` and a newline ``Ċ``.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from itertools import accumulate


def _bytes_to_unicode() -> dict[int, str]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


BYTE_TO_CHAR: dict[int, str] = _bytes_to_unicode()
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in BYTE_TO_CHAR.items()}

_DECODING = "".join(BYTE_TO_CHAR[b] for b in range(256))
_ENCODING = codecs.charmap_build(_DECODING)
"""The stand-ins as a codec's tables: converting runs in C."""


def bytes_to_token_string(token: bytes) -> str:
    return codecs.charmap_decode(token, "strict", _DECODING)[0]


def token_string_to_bytes(text: str) -> bytes:
    """Inverse of ``bytes_to_token_string``; KeyError for a character outside the mapping."""
    try:
        return codecs.charmap_encode(text, "strict", _ENCODING)[0]
    except UnicodeEncodeError as e:
        raise KeyError(text[e.start]) from None


def token_strings_to_bytes(texts: Sequence[str]) -> list[bytes]:
    """``token_string_to_bytes`` of each text, converted all at once (one character is one
    byte, so each text's bytes lie at the same offsets)."""
    joined = "".join(texts)
    data = token_string_to_bytes(joined)
    ends = list(accumulate(map(len, texts)))
    return [data[a:b] for a, b in zip([0, *ends], ends, strict=False)]
