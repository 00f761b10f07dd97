"""The compiled parts of ``engine`` (everything else is in pyproject.toml)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("engine._trainer_core", ["engine/_trainer_core.c"], depends=["engine/_pair_hash.h"]),
        Extension(
            "engine._encoder_core",
            ["engine/_encoder_core.c", "engine/_pretokenize_core.c"],
            depends=["engine/_pair_hash.h", "engine/_pretokenize_core.h", "engine/_unicode_classes.h"],
        ),
        Extension("engine._space_parts", ["engine/_space_parts.c"]),
    ]
)
