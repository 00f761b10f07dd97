"""A browser tab's process, as textual-serve starts it: it hands its standard streams and
its environment to the server, which forks the tab's app from the warm parent, and exits.

Run as ``python -I -S launch.py DOOR`` (the standard library only, no site-packages: it
starts in milliseconds); ``DOOR`` is the server's unix socket. The streams travel as file
descriptors (SCM_RIGHTS), so the app writes straight to the pipes textual-serve reads.
"""

from __future__ import annotations

import json
import os
import socket
import sys


def main(door: str) -> int:
    with socket.socket(socket.AF_UNIX) as server:
        try:
            server.connect(door)
            socket.send_fds(server, [json.dumps(dict(os.environ)).encode("utf-8")], [0, 1, 2])
        except OSError as e:
            print(f"bpe-tui: the server's door {door} is shut: {e.strerror or e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
