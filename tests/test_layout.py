"""The house in rooms: the import rules hold, no import circles, short top levels, and the
documentation's layout page names what is in the tree."""

from __future__ import annotations

import re
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

from tests.conftest import ROOT

PACKAGES = ("engine", "bpe_tui")


def test_the_import_contracts_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyproject.toml's contracts: engine is headless, shared parts import no feature,
    features and screens are independent."""
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_no_import_circles() -> None:
    """No module reaches itself through the modules it imports, lazy imports included."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    circles = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported.split(".")[0] in PACKAGES and graph.chain_exists(importer=imported, imported=module):
                circles.append(f"{module} -> {' -> '.join(graph.find_shortest_chain(importer=imported, imported=module) or ())}")
    assert circles == []


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__" and not p.name.endswith(".so"))


@pytest.mark.parametrize("package", PACKAGES)
def test_a_top_level_lists_at_most_a_dozen_entries(package: str) -> None:
    assert len(_entries(ROOT / package)) <= 12, _entries(ROOT / package)


def test_the_layout_page_names_every_file_and_folder() -> None:
    """docs/layout.md names each module, C source and stylesheet of the two packages, and
    every path it names exists."""
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if "__pycache__" in path.parts or path.name == "__init__.py" or path.suffix not in {".py", ".c", ".h", ".tcss"}:
                continue
            if path.name not in page:
                missing.append(str(path.relative_to(ROOT)))
        for folder in sorted(p for p in (ROOT / package).rglob("*") if p.is_dir() and p.name != "__pycache__"):
            if f"{folder.name}/" not in page:
                missing.append(f"{folder.relative_to(ROOT)}/")
    assert missing == []
    named = set(re.findall(r"`((?:engine|bpe_tui)/[\w/.]+)`", page))
    assert named and all((ROOT / path).exists() for path in named), sorted(p for p in named if not (ROOT / p).exists())


def test_engine_names_its_public_names_once_each_and_loads_them_when_used() -> None:
    """``engine.__all__`` and the homes its names are loaded from list the same names, each
    found there; importing the engine loads neither the trainer nor the encoder."""
    import subprocess
    import sys

    import engine

    assert sorted(engine.__all__) == sorted(engine._HOMES)
    assert all(getattr(engine, name) is not None for name in engine.__all__)
    code = "import sys, engine; print(sorted(m for m in sys.modules if m in ('engine.train.trainer', 'engine.encode.tokenizer')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
