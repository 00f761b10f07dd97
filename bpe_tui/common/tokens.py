"""How token bytes look on screen: one readable, consistent form everywhere.

Spaces, newlines, tabs and carriage returns get a visible mark. A byte-level token may hold
only part of a multi-byte UTF-8 character (a Chinese character is three bytes, and BPE
learns pieces of characters first). Read inside its text (a word's segmentation, the
encode view), such a part names its character and the bytes of it that it holds:
``五₁₋₂`` is the first two bytes of 五, ``五₃`` its third. Alone (a pair to merge, a new
token), it shows as ``\\xNN`` escapes, followed by the characters of the corpus its
incomplete ends most often belong to (``\\xe4\\xba →了人二``: it begins them). Both are
dimmed, so they never pass for whole characters. With ``x`` (``raw_bytes``) every part is
shown as escapes and nothing is named. Classic BPE's tokens are strings: their
end-of-word marker ``</w>`` is shown as it is, styled like a mark.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import StyleType
from rich.text import Text
from textual.dom import DOMNode

from engine.corpus.characters import SHOWN, PartialChars, utf8_length
from engine.train.classic import END_OF_WORD
from engine.train.events import Token

MARKS = {" ": "␣", "\n": "↵", "\t": "→", "\r": "␍"}
SUBSCRIPTS = str.maketrans("0123456789-", "₀₁₂₃₄₅₆₇₈₉₋")

Piece = tuple[str, bool]
"""A run of a token's readable form, and whether it is dimmed (a mark, an escape, a part
of a character)."""


def raw_bytes(node: DOMNode) -> bool:
    """Whether the app shows tokens as their raw bytes (``x``) rather than naming the
    characters they hold part of."""
    return bool(getattr(node.app, "raw_bytes", False))


def _pieces(token: Token) -> list[Piece]:
    """A token's readable form on its own."""
    if isinstance(token, str):  # classic BPE: its characters, and </w> as a mark
        head, marker, tail = token.partition(END_OF_WORD)
        return _pieces(head.encode()) + ([(marker, True)] if marker else []) + (_pieces(tail) if tail else [])
    out: list[Piece] = []
    text = token.decode("utf-8", errors="surrogateescape")
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
            out.append((f"\\x{code - 0xDC00:02x}", True))
        elif ch in MARKS:
            out.append((MARKS[ch], True))
        elif not ch.isprintable():
            out.append((f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}", True))
        else:
            out.append((ch, False))
    return out


def byte_numbers(first: int, last: int) -> str:
    """Bytes ``first``-``last`` (1-based) of a character, as subscripts: ``₁₋₂``, ``₃``."""
    return (str(first) if first == last else f"{first}-{last}").translate(SUBSCRIPTS)


def _characters(text: bytes) -> list[tuple[int, int]]:
    """Where each character of ``text`` starts and ends; a byte that starts no whole
    character is one of its own."""
    out, i = [], 0
    while i < len(text):
        n = utf8_length(text[i])
        if n > 1:
            try:
                text[i : i + n].decode("utf-8")  # cut short or malformed: a byte of its own
            except UnicodeDecodeError:
                n = 1
        out.append((i, i + max(n, 1)))
        i += max(n, 1)
    return out


def text_pieces(parts: Sequence[Token], raw: bool = False) -> list[list[Piece]]:
    """Each of ``parts`` read within the text they make together: a part holding some bytes
    of a character names it, with the numbers of those bytes (``五₁₋₂``). ``raw``, or
    classic BPE's strings: each part on its own."""
    data = [part for part in parts if isinstance(part, bytes)]
    if raw or len(data) < len(parts):
        return [_pieces(part) for part in parts]
    text = b"".join(data)
    chars = _characters(text)
    out: list[list[Piece]] = []
    c = start = 0
    for part in data:
        end = start + len(part)
        pieces: list[Piece] = []
        whole = start  # where the whole characters not yet added begin
        while c < len(chars) and chars[c][0] < end:
            first, last = chars[c]
            if first < start or last > end:  # a character this part holds some bytes of
                pieces += _pieces(text[whole:first])
                ch = text[first:last].decode("utf-8")
                held = byte_numbers(max(first, start) - first + 1, min(last, end) - first)
                pieces.append((ch + held, True))
                whole = min(last, end)
            if last > end:  # it goes on in the next part
                break
            c += 1
        out.append(pieces + _pieces(text[whole:end]))
        start = end
    return out


def pieces_text(pieces: Sequence[Piece], style: StyleType = "", escape_style: StyleType = "dim") -> Text:
    """Readable pieces as rich ``Text``, the dimmed ones in ``escape_style``."""
    text = Text(style=style, no_wrap=True)
    for piece, dimmed in pieces:
        text.append(piece, escape_style if dimmed else "")
    return text


def show_token(token: Token) -> str:
    """Plain readable form of a token's bytes."""
    return "".join(piece for piece, _ in _pieces(token))


def show_parts(parts: Sequence[Token], raw: bool = False) -> list[str]:
    """Plain readable form of each of ``parts``, read within the text they make."""
    return ["".join(piece for piece, _ in pieces) for pieces in text_pieces(parts, raw)]


def token_text(token: Token, style: StyleType = "", escape_style: StyleType = "dim") -> Text:
    """Readable form as rich ``Text``: marks and escapes styled apart from real characters."""
    return pieces_text(_pieces(token), style, escape_style)


def parts_text(
    parts: list[Token],
    sep: str = "|",
    sep_style: StyleType = "dim",
    escape_style: StyleType = "dim",
    marked: Token | None = None,
    marked_style: StyleType = "",
    raw: bool = False,
) -> Text:
    """Tokens side by side with a dimmed ``sep`` between them: a pair or a segmentation,
    read as one text (see ``text_pieces``).

    Tokens equal to ``marked`` (the newest token, say) get ``marked_style``.
    """
    text = Text(no_wrap=True)
    for i, (part, pieces) in enumerate(zip(parts, text_pieces(parts, raw), strict=True)):
        if i:
            text.append(sep, sep_style)
        text.append_text(pieces_text(pieces, marked_style if part == marked else "", escape_style))
    return text


def chars_label(chars: PartialChars | None, limit: int = SHOWN) -> str:
    """The characters a token's incomplete ends belong to, the ``limit`` most frequent:
    ``←五生`` (its first bytes end them), ``→了人二`` (its last bytes begin them); empty when
    it holds whole characters."""
    if chars is None:
        return ""
    ends = f"←{''.join(chars.ends[:limit])}" if chars.ends else ""
    begins = f"→{''.join(chars.begins[:limit])}" if chars.begins else ""
    return " ".join(label for label in (ends, begins) if label)


def named_token_text(
    token: Token, chars: PartialChars | None, style: StyleType = "", escape_style: StyleType = "dim", raw: bool = False
) -> Text:
    """A token on its own: its readable form, then (unless ``raw``) the characters its
    incomplete ends belong to."""
    text = token_text(token, style, escape_style)
    label = "" if raw else chars_label(chars)
    if label:
        text.append(f" {label}", escape_style)
    return text


def chars_sentence(token: bytes, chars: PartialChars) -> str:
    """What ``token`` holds of which characters, in words: ``begins 了 人 二 (bytes 1-2 of
    3)``; the byte numbers are those of the most frequent character."""

    def held(first: int, last: int, of: str) -> str:
        return f"{'byte' if first == last else 'bytes'} {first if first == last else f'{first}-{last}'} of {len(of.encode())}"

    said = []
    if chars.ends:
        top = chars.ends[0].encode()
        at = top.find(chars.opening, 1) if chars.opening == token else len(top) - len(chars.opening)
        verb = "lies in" if at + len(chars.opening) < len(top) else "ends"
        said.append(f"{verb} {' '.join(chars.ends)} ({held(at + 1, at + len(chars.opening), chars.ends[0])})")
    if chars.begins:
        said.append(f"begins {' '.join(chars.begins)} ({held(1, len(chars.closing), chars.begins[0])})")
    return " and ".join(said)
