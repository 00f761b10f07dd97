"""How token bytes look on screen: one readable, consistent form everywhere.

Spaces, newlines, tabs and carriage returns get a visible mark; bytes that are not (yet)
valid UTF-8, such as half of a Chinese character, are shown as ``\\xNN`` escapes in a
dimmed style so they never mangle the line. Classic BPE's tokens are strings: their
end-of-word marker ``</w>`` is shown as it is, styled like a mark.
"""

from __future__ import annotations

from rich.style import StyleType
from rich.text import Text

from engine.train.classic import END_OF_WORD
from engine.train.events import Token

MARKS = {" ": "␣", "\n": "↵", "\t": "→", "\r": "␍"}


def _pieces(token: Token) -> list[tuple[str, bool]]:
    """``(text, is_escape)`` runs of a token's readable form."""
    if isinstance(token, str):  # classic BPE: its characters, and </w> as a mark
        head, marker, tail = token.partition(END_OF_WORD)
        return _pieces(head.encode()) + ([(marker, True)] if marker else []) + (_pieces(tail) if tail else [])
    out: list[tuple[str, bool]] = []
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


def show_token(token: Token) -> str:
    """Plain readable form of a token's bytes."""
    return "".join(piece for piece, _ in _pieces(token))


def token_text(token: Token, style: StyleType = "", escape_style: StyleType = "dim") -> Text:
    """Readable form as rich ``Text``: marks and escapes styled apart from real characters."""
    text = Text(style=style, no_wrap=True)
    for piece, escaped in _pieces(token):
        text.append(piece, escape_style if escaped else "")
    return text


def parts_text(
    parts: list[Token],
    sep: str = "|",
    sep_style: StyleType = "dim",
    escape_style: StyleType = "dim",
    marked: Token | None = None,
    marked_style: StyleType = "",
) -> Text:
    """Tokens side by side with a dimmed ``sep`` between them: a pair or a segmentation.

    Tokens equal to ``marked`` (the newest token, say) get ``marked_style``.
    """
    text = Text(no_wrap=True)
    for i, part in enumerate(parts):
        if i:
            text.append(sep, sep_style)
        text.append_text(token_text(part, marked_style if part == marked else "", escape_style))
    return text
