"""Files handed to a browser: a served app (``bpe-tui serve``) runs on the teacher's machine,
so what a student saves must reach the student's browser, never that machine's disk."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from textual.app import App


def download(app: App[Any], stem: str, files: dict[str, str]) -> str:
    """Hand ``files`` (contents by name) to the browser through Textual's delivery, which
    textual-serve turns into a download; the name of what the browser receives. One file
    goes as it is; several go as one zip ``stem.zip`` holding them in a folder ``stem/``:
    one download keeps them together, and browsers ask before letting a page start several."""
    if len(files) == 1:
        ((name, text),) = files.items()
        app.deliver_text(io.StringIO(text), save_filename=name)
        return name
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, text in files.items():
            zipped.writestr(f"{stem}/{name}", text)
    app.deliver_binary(archive, save_filename=f"{stem}.zip", mime_type="application/zip")
    return f"{stem}.zip"
