"""The C sources are portable C11: each translation unit compiles without a warning in strict
ISO C11 under gcc and under clang (a compiler that is not installed is skipped, saying so),
against this Python's headers and those of the other versions installed beside it,
and no source uses a GNU extension or an unguarded glibc-only call, which MSVC or another C
library would not build."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT

FLAGS = ["-std=c11", "-pedantic", "-Wall", "-Wextra", "-Wvla", "-Werror", "-fsyntax-only"]
"""ISO C11 and nothing else; -Wvla because MSVC has no variable-length arrays."""
INCLUDE_DIRS = ["engine", "engine/corpus", "engine/train"]
"""setup.py's include_dirs: the headers shared by the extension modules."""
COMPILERS = ["gcc", "clang"]
SOURCES = sorted((ROOT / "engine").rglob("*.c"))
HEADERS = sorted((ROOT / "engine").rglob("*.h"))

GNU_ONLY = re.compile(r"__attribute__|__atomic_|__sync_|__builtin_|__typeof__|\btypeof\b|__asm__|\basm\b|__extension__|__thread\b|\(\{")
"""GNU C, which MSVC rejects: attributes, builtins, inline assembly, statement expressions."""
GLIBC_ONLY = re.compile(r"<malloc\.h>|\bmalloc_trim\b|\bmallopt\b|\bmalloc_usable_size\b")
"""glibc's malloc tunables: only inside ``#ifdef __GLIBC__``."""


def _code(path: Path) -> list[str]:
    """The lines of a C file with its comments blanked (line numbers kept)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    return [re.sub(r"//.*", "", line) for line in text.split("\n")]


def _glibc_guarded(lines: list[str]) -> list[bool]:
    """For each line, whether it lies in an ``#ifdef __GLIBC__`` branch (not its ``#else``)."""
    stack: list[bool] = []
    guarded = []
    for line in lines:
        directive = line.strip()
        if re.match(r"#\s*if", directive):
            stack.append(bool(re.match(r"#\s*(ifdef\s+__GLIBC__|if\s+defined\s*\(?\s*__GLIBC__)", directive)))
        elif re.match(r"#\s*(else|elif)", directive) and stack:
            stack[-1] = False
        elif re.match(r"#\s*endif", directive) and stack:
            stack.pop()
        guarded.append(any(stack))
    return guarded


def _flagged(path: Path) -> list[int]:
    """The numbers of the lines of ``path`` that use GNU C, or glibc outside its guard."""
    lines = _code(path)
    guarded = _glibc_guarded(lines)
    return [n for n, line in enumerate(lines, 1) if GNU_ONLY.search(line) or (GLIBC_ONLY.search(line) and not guarded[n - 1])]


def test_the_sources_are_found() -> None:
    names = {p.name for p in SOURCES}
    assert {"_trainer_core.c", "_wordpiece_core.c", "_unigram_core.c", "_encoder_core.c", "_pretokenize_core.c", "_tally.c"} <= names


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_each_source_compiles_as_strict_c11_without_a_warning(compiler: str, source: Path) -> None:
    exe = shutil.which(compiler)
    if exe is None:
        pytest.skip(f"{compiler} is not installed: the C sources are not checked with it")
    includes = [f"-I{ROOT / d}" for d in INCLUDE_DIRS]
    cmd = [exe, *FLAGS, "-isystem", sysconfig.get_paths()["include"], *includes, str(source)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (0, ""), " ".join(cmd) + "\n" + result.stderr


def _other_pythons() -> list[Path]:
    """The headers of the other CPython versions the wheels are made for (3.10-3.13) that are
    installed beside this one, as pyenv lays them out: a change in them (3.12's Python.h no
    longer brings offsetof) breaks those wheels alone."""
    here = Path(sysconfig.get_paths()["include"]).resolve()
    found = sorted(Path(sys.base_prefix).parent.glob("3.1[0-3]*/include/python3.1[0-3]"))
    return [p for p in found if p.resolve() != here and (p / "Python.h").is_file()]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_each_source_compiles_against_every_python_installed(source: Path) -> None:
    exe, others = shutil.which("gcc"), _other_pythons()
    if exe is None or not others:
        pytest.skip("no gcc, or no other CPython installed beside this one: checked against this one's headers alone")
    includes = [f"-I{ROOT / d}" for d in INCLUDE_DIRS]
    failed = []
    for headers in others:
        cmd = [exe, *FLAGS, "-isystem", str(headers), *includes, str(source)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if (result.returncode, result.stderr) != (0, ""):
            failed.append(" ".join(cmd) + "\n" + result.stderr)
    assert failed == []


@pytest.mark.parametrize("path", SOURCES + HEADERS, ids=lambda p: p.name)
def test_no_gnu_extension_and_no_unguarded_glibc_call(path: Path) -> None:
    lines = _code(path)
    assert [f"{path.relative_to(ROOT)}:{n}: {lines[n - 1].strip()}" for n in _flagged(path)] == []


def test_the_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The scan flags each kind of line it is meant to, and passes comments and a guarded call."""
    bad = tmp_path / "bad.c"
    bad.write_text(
        "typedef struct __attribute__((packed)) { int a; } P;\n"
        "/* __attribute__ in a comment is fine */\n"
        "int f(int *p) { return __atomic_load_n(p, 0) + ({ 1; }); }\n"
        "#include <malloc.h>\n"
        "#ifdef __GLIBC__\n"
        "static void g(void) { malloc_trim(0); }\n"
        "#else\n"
        "static void h(void) { malloc_trim(0); }\n"
        "#endif\n",
        encoding="utf-8",
    )
    assert _flagged(bad) == [1, 3, 4, 8]
