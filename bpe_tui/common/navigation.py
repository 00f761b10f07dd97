"""Where a screen stands among the app's screens: what its ``q`` does."""

from __future__ import annotations

from textual.screen import Screen


def over_another(screen: Screen) -> bool:
    """Whether ``screen`` was opened over another of ours (``q`` goes back) rather than
    first (``q`` quits)."""
    stack = screen.app.screen_stack
    below = stack[: stack.index(screen)] if screen in stack else []
    return any(type(other) is not Screen for other in below)
