"""The warm parent's preload: multiprocessing's fork server imports this module once, when
``bpe-tui serve`` starts, and every tab's app and trainer then fork from it.

Importing it imports what a tab runs (Textual's web driver, the app, the engine) and does
what every tab would do alike (the served command's ``warm``: a served ``train`` reads its
corpus into a trainer at merge 0), then freezes the garbage collector's objects so that
collections in the tabs leave these pages shared.
"""

from __future__ import annotations

import base64
import gc
import os
import pickle
from multiprocessing import spawn

from bpe_tui.serve import session  # noqa: F401  (what every tab's process runs)
from bpe_tui.serve.warm import WARM
from engine import BpeError


def _warm_up() -> None:
    # Loading collects nothing: a collection would leave holes in pages the tabs share,
    # which their new objects would fill, copying each page. Each process forked from here
    # collects again.
    gc.disable()
    os.register_at_fork(after_in_child=gc.enable)
    # What each tab's app loads as it starts, besides the app: its driver, what Textual and
    # Rich load lazily on a first frame, and what starts its trainer. An import in a tab
    # costs more than the module: it writes to the import system's objects, copying pages.
    import multiprocessing.popen_forkserver  # noqa: F401

    import textual.drivers.headless_driver  # noqa: F401
    import textual.drivers.web_driver  # noqa: F401
    import textual.layouts.factory  # noqa: F401
    import textual.layouts.horizontal  # noqa: F401
    import textual.layouts.stream  # noqa: F401
    import textual.pilot  # noqa: F401
    import textual.scrollbar  # noqa: F401
    from rich.cells import cell_len

    cell_len("字")  # Rich's table of cell widths, read on the first wide character
    preparation, call = pickle.loads(base64.b64decode(os.environ.pop(WARM)))
    spawn.prepare(preparation)  # the server's __main__, sys.path and directory: ``call`` unpickles
    warm, args = pickle.loads(call)
    try:
        warm(args)
    except BpeError:
        pass  # checked before the server started; should the corpus change since, each tab says so on its screen
    gc.freeze()


_warm_up()
