"""The compiled parts of ``engine`` (everything else is in pyproject.toml)."""

import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError

SHARED = ["engine", "engine/corpus", "engine/train"]
"""Header folders: ``_pair_hash.h`` serves the merge trainers' cores and the encoder, ``_bytes_hash.h``
the encoder, the tally and WordPiece's core, the pre-tokenizer and the JSONL reader are part of the encoder,
``_bits.h`` and ``_huge_pages.h`` serve the encoder and BPE's core; the trainers' cores share the headers of
``engine/train``."""

MERGE_CORE_HEADERS = [
    "engine/_pair_hash.h",
    "engine/corpus/_bits.h",
    "engine/train/_core_module.h",
    "engine/train/_grow.h",
    "engine/train/_lazy_heap.h",
    "engine/train/_pair_records.h",
    "engine/train/_positions.h",
    "engine/train/_step_events.h",
    "engine/train/_token_bytes.h",
]
"""What BPE's and WordPiece's cores share: pair records, lazy heap, event rows, tokens' bytes, the
Python module around the Core, bit scans (Unigram's core uses ``_core_module.h`` and ``_positions.h``)."""

COMPILER_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError)
"""What setuptools raises when there is no compiler, or it cannot run."""

NO_COMPILER = """
bpe-tui could not be installed from source: it compiles seven C extension modules (the
trainer's merge loop, WordPiece's, Unigram's EM, the encoder, part counting, the
pre-tokenizer and the rank-file reader), and that needs a C compiler and Python's headers,
which were not found or did not work. Either install a prebuilt wheel, which needs no compiler:
    pip install --only-binary=:all: bpe-tui
or install a C compiler, then run pip again:
    Debian, Ubuntu: sudo apt install build-essential python3-dev
    macOS:          xcode-select --install
    Windows:        "Microsoft C++ Build Tools", https://visualstudio.microsoft.com/visual-cpp-build-tools/
"""


class BuildExt(build_ext):
    """build_ext that asks MSVC for C11, and says in one paragraph what to do when there is no
    working compiler, instead of setuptools' error from deep inside the build."""

    def run(self) -> None:
        try:
            super().run()
        except COMPILER_ERRORS:
            if self._compiler_works():
                raise  # a compiler that runs and fails on these sources: its own message says why
            raise SystemExit(NO_COMPILER) from None

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "msvc":  # its default C is not C11: _Static_assert, _Alignof
            for ext in self.extensions:
                if "/std:c11" not in ext.extra_compile_args:
                    ext.extra_compile_args.append("/std:c11")
        super().build_extensions()

    def _compiler_works(self) -> bool:
        """Whether the compiler compiles a file that includes Python.h."""
        if not hasattr(self.compiler, "compile"):  # no compiler object was made
            return False
        with tempfile.TemporaryDirectory() as tmp:
            probe = Path(tmp, "probe.c")
            probe.write_text("#include <Python.h>\nint probe(void) { return PY_MAJOR_VERSION; }\n", encoding="utf-8")
            try:
                self.compiler.compile([str(probe)], output_dir=tmp)
            except COMPILER_ERRORS:
                return False
        return True


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "engine.train._trainer_core",
            ["engine/train/_trainer_core.c"],
            include_dirs=SHARED,
            depends=["engine/corpus/_huge_pages.h", *MERGE_CORE_HEADERS],
        ),
        Extension(
            "engine.train.wordpiece._wordpiece_core",
            ["engine/train/wordpiece/_wordpiece_core.c"],
            include_dirs=SHARED,
            depends=["engine/_bytes_hash.h", *MERGE_CORE_HEADERS],
        ),
        Extension(
            "engine.train.unigram._unigram_core",
            ["engine/train/unigram/_unigram_core.c"],
            include_dirs=SHARED,
            depends=["engine/train/_core_module.h", "engine/train/_positions.h"],
        ),
        Extension(
            "engine.encode._encoder_core",
            ["engine/encode/_encoder_core.c", "engine/encode/_whole_chars.c", "engine/corpus/_pretokenize_core.c"],
            include_dirs=SHARED,
            depends=[
                "engine/_atomics.h",
                "engine/_bytes_hash.h",
                "engine/corpus/_huge_pages.h",
                "engine/_pair_hash.h",
                "engine/corpus/_bits.h",
                "engine/corpus/_jsonl.h",
                "engine/corpus/_pretokenize_core.h",
                "engine/corpus/_pretokenize_simd.h",
                "engine/corpus/_unicode_classes.h",
                "engine/encode/_whole_chars.h",
            ],
        ),
        Extension(
            "engine.corpus._tally",
            ["engine/corpus/_tally.c", "engine/corpus/_pretokenize_core.c"],
            include_dirs=SHARED,
            depends=[
                "engine/_bytes_hash.h",
                "engine/corpus/_bits.h",
                "engine/corpus/_jsonl.h",
                "engine/corpus/_outbox.h",
                "engine/corpus/_pretokenize_core.h",
                "engine/corpus/_pretokenize_simd.h",
                "engine/corpus/_unicode_classes.h",
            ],
        ),
        Extension(
            "engine.corpus._pretokenize",
            ["engine/corpus/_pretokenize.c", "engine/corpus/_pretokenize_core.c"],
            depends=[
                "engine/corpus/_bits.h",
                "engine/corpus/_pretokenize_core.h",
                "engine/corpus/_pretokenize_simd.h",
                "engine/corpus/_unicode_classes.h",
            ],
        ),
        Extension("engine.formats._ranks_core", ["engine/formats/_ranks_core.c"]),
    ],
)
