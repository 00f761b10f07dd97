"""Durations as people read them, from milliseconds to hours."""

from __future__ import annotations


def show_seconds(seconds: float | None) -> str:
    """``0.42 s``, ``2.7 ms``, ``3 min 05 s``, ``2 h 04 min``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    if seconds < 0.1:
        return f"{seconds * 1000:.2g} ms" if seconds < 0.01 else f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"
