"""The compiled parts of ``engine`` (everything else is in pyproject.toml)."""

from setuptools import Extension, setup

SHARED = ["engine", "engine/corpus"]
"""Header folders: ``_pair_hash.h`` serves both cores, the pre-tokenizer is part of the encoder."""

setup(
    ext_modules=[
        Extension(
            "engine.train._trainer_core",
            ["engine/train/_trainer_core.c"],
            include_dirs=SHARED,
            depends=["engine/_pair_hash.h"],
        ),
        Extension(
            "engine.encode._encoder_core",
            ["engine/encode/_encoder_core.c", "engine/corpus/_pretokenize_core.c"],
            include_dirs=SHARED,
            depends=["engine/_pair_hash.h", "engine/corpus/_pretokenize_core.h", "engine/corpus/_unicode_classes.h"],
        ),
        Extension("engine.corpus._space_parts", ["engine/corpus/_space_parts.c"]),
        Extension(
            "engine.corpus._pretokenize",
            ["engine/corpus/_pretokenize.c", "engine/corpus/_pretokenize_core.c"],
            depends=["engine/corpus/_pretokenize_core.h", "engine/corpus/_unicode_classes.h"],
        ),
    ]
)
