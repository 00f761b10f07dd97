"""Regexes between Hugging Face files and the engine: Oniguruma's Ruby syntax there, Python's
``regex`` module here. The two read a few constructs differently, so a regex is rewritten
on the way in (``from_onig``) and on the way out (``to_onig``) to mean the same:

- ``X{m,n}+``: possessive in ``regex`` (and in tiktoken's engine), but a repetition of the
  interval in Oniguruma: ``(?>X{m,n})`` out, ``(?:X{m,n})+`` in;
- ``^`` and ``$``: the start and end of the text (``$`` also before a final newline) in
  ``regex``, of any line in Oniguruma: ``\\A`` and ``(?=\\n?\\z)`` out, ``(?m:^)`` and
  ``(?m:$)`` in; ``\\Z`` is the very end in ``regex``, Oniguruma's ``\\z``.

Everything else the byte-level pre-tokenizers use (``\\p{..}`` classes, ``(?i:...)``,
possessive ``?+ *+ ++``, look-arounds, atomic groups) reads the same in both and is copied
as written; a regex with neither construct comes back unchanged, character for character.
A regex that turns multi-line mode on itself (``(?m)``) keeps its anchors as written.
"""

from __future__ import annotations

import regex

_INTERVAL = regex.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")
_GROUP_OPENER = regex.compile(r"\(\?(?:[:=!>|]|<[=!]|P?<\w+>|[a-zA-Z^-]*[:)])|\(")


def from_onig(pattern: str) -> str:
    """An Oniguruma (HF) regex as the ``regex`` module reads it the same."""
    return _rewrite(pattern, to_onig=False)


def to_onig(pattern: str) -> str:
    """A ``regex`` module regex as Oniguruma (HF) reads it the same."""
    return _rewrite(pattern, to_onig=True)


def _rewrite(pattern: str, to_onig: bool) -> str:
    multiline = bool(regex.search(r"\(\?[a-zA-Z]*m[a-zA-Z-]*[:)]", pattern))
    out: list[str] = []
    atom = 0  # where in ``out`` the last atom (what a quantifier repeats) starts
    groups: list[int] = []  # where each open group starts
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            end = _escape_end(pattern, i)
            piece = pattern[i:end]
            if piece in ("\\Z", "\\z"):
                piece = _END[to_onig, piece]
            atom = len(out)
            out.append(piece)
            i = end
        elif c == "[":
            end = _class_end(pattern, i)
            atom = len(out)
            out.append(pattern[i:end])
            i = end
        elif c == "(":
            opener = _GROUP_OPENER.match(pattern, i)
            assert opener is not None  # "(" alone matches
            text = opener.group()
            if text.endswith(")"):  # flags alone, (?i): no group to close
                out.append(text)
            else:
                groups.append(len(out))
                out.append(text)
            i = opener.end()
        elif c == ")":
            atom = groups.pop() if groups else len(out)
            out.append(c)
            i += 1
        elif c == "{" and (interval := _INTERVAL.match(pattern, i)):
            i = interval.end()
            if i < n and pattern[i] == "+":  # the construct the two read differently
                repeated = "".join(out[atom:])
                del out[atom:]
                out.append(f"(?>{repeated}{interval.group()})" if to_onig else f"(?:{repeated}{interval.group()})+")
                i += 1
            else:
                out.append(interval.group())
        elif c in "^$" and not multiline:
            out.append(_ANCHORS[to_onig, c])
            atom = len(out)
            i += 1
        else:
            if c not in "*+?":
                atom = len(out)
            out.append(c)
            i += 1
    return "".join(out)


_ANCHORS = {(True, "^"): r"\A", (True, "$"): r"(?=\n?\z)", (False, "^"): "(?m:^)", (False, "$"): "(?m:$)"}
_END = {(True, r"\Z"): r"\z", (True, r"\z"): r"\z", (False, r"\Z"): r"(?=\n?\Z)", (False, r"\z"): r"\Z"}


def _escape_end(pattern: str, i: int) -> int:
    """Where the escape at ``i`` ends: ``\\p{..}``, ``\\x{..}`` and the like through the brace."""
    if i + 1 >= len(pattern):
        return i + 1
    if pattern[i + 1] in "pPxuNgk" and i + 2 < len(pattern) and pattern[i + 2] in "{<":
        close = pattern.find("}" if pattern[i + 2] == "{" else ">", i + 2)
        return close + 1 if close >= 0 else len(pattern)
    return i + 2


def _class_end(pattern: str, i: int) -> int:
    """Where the character class at ``i`` ends (nested classes and ``[:alpha:]`` included)."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1  # a "]" first is a literal
    depth = 1
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j = _escape_end(pattern, j)
            continue
        if c == "[" and pattern.startswith("[:", j):
            close = pattern.find(":]", j + 2)
            if close >= 0:
                j = close + 2
                continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if not depth:
                return j + 1
        j += 1
    return len(pattern)
