"""The most memory this process and its children have held, as the system counted it."""

from __future__ import annotations

import sys


def peak_memory() -> tuple[int, int] | None:
    """``(this process's peak resident bytes, the largest child's)``, the child's 0 when it
    had none; None where the system does not say (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes there, KiB on Linux
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
    return own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * unit
