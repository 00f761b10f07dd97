"""The form of a screen's help, the text of ``?`` and ``bpe-tui explain``: what the screen is
for and each panel in the lecture's words, then its keys.

Each screen carries its own ``SCREEN_HELP`` beside its ``BINDINGS``; the key list is read from
those bindings, so the keys shown are always the keys bound. (Not ``HELP``: Textual reads a
widget's ``HELP`` as Markdown, for the focused widget in its keys panel.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import App
from textual.binding import Binding, BindingType
from textual.keys import format_key
from textual.screen import Screen


@dataclass(frozen=True)
class ScreenHelp:
    """A screen's help: what it is for, then each panel by its title."""

    title: str
    intro: str
    panels: tuple[tuple[str, str], ...]
    token_marks: bool = True
    """Whether it ends with how token bytes look (``TOKEN_MARKS``): not where tokens are strings
    of whole characters (WordPiece)."""


TOKEN_MARKS = (
    "Token bytes look the same everywhere: ␣ is a space, ↵ a newline, → a tab. A token holding "
    "part of a multi-byte UTF-8 character names it, with the numbers of the bytes it holds: "
    "五₁₋₂ is the first two of the three bytes of 五, 五₃ the third. Where there is no text "
    "around it to say which character, it shows as escapes such as \\xe4\\xba, on the "
    "training screen followed by the corpus's characters it begins (→了人二) or ends (←)."
)

Shown = Callable[[str], bool]
"""Whether a screen has an action at all: its ``offers(action)`` where it defines one (the
training screen under classic BPE has no encode view). Keys unavailable only for the moment
(dimmed by ``check_action``) are still listed."""


def help_for(screen: Screen[Any]) -> ScreenHelp | None:
    """The help ``screen`` carries (its class's ``SCREEN_HELP``, or the one it set for itself
    when it opened: the training screen's under WordPiece), if it has one."""
    entry = getattr(screen, "SCREEN_HELP", None)
    return entry if isinstance(entry, ScreenHelp) else None


def key_rows(bindings: list[BindingType], shown: Shown = lambda action: True) -> list[tuple[str, str]]:
    """``(keys, what they do)`` for each binding whose action is ``shown``, in the order they
    are declared."""
    rows = []
    for binding in bindings:
        if not isinstance(binding, Binding) or not shown(binding.action.partition("(")[0]):
            continue
        keys = binding.key_display or " or ".join(format_key(key.strip()) for key in binding.key.split(","))
        rows.append((keys, binding.tooltip or binding.description))
    return rows


def render_help(
    entry: ScreenHelp,
    bindings: list[BindingType],
    app_bindings: list[BindingType],
    heading: Style,
    dim: Style,
    shown: Shown = lambda action: True,
) -> RenderableType:
    """The whole help text: the intro, each panel, the token marks, then the keys of the
    actions ``shown``."""
    parts: list[RenderableType] = [Text(entry.intro), Text()]
    for title, body in entry.panels:
        parts += [Text(title, heading), Text(body), Text()]
    if entry.token_marks:
        parts += [Text(TOKEN_MARKS, dim), Text()]
    parts.append(Text("keys", heading))
    rows = key_rows([*bindings, *app_bindings], shown)
    rows.append((format_key(App.COMMAND_PALETTE_BINDING), "Every key above as a command, by name"))
    width = max(len(key) for key, _ in rows)
    for key, does in rows:
        parts.append(Text.assemble((key.ljust(width + 2), heading), does))
    return Group(*parts)
