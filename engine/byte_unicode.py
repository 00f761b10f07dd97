"""GPT-2's printable stand-ins for bytes, used by ``vocab.json``, ``merges.txt`` and HF files.

Printable Latin-1 bytes stand for themselves; the rest (space, control bytes, ...) are
shifted to U+0100 and up, so a space is ``Ġ`` and a newline ``Ċ``.
"""

from __future__ import annotations


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


def bytes_to_token_string(token: bytes) -> str:
    return "".join(BYTE_TO_CHAR[b] for b in token)


def token_string_to_bytes(text: str) -> bytes:
    """Inverse of ``bytes_to_token_string``; KeyError for a character outside the mapping."""
    return bytes(CHAR_TO_BYTE[ch] for ch in text)
