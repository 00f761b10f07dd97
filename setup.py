"""The compiled parts of ``engine`` (everything else is in pyproject.toml)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("engine._trainer_core", ["engine/_trainer_core.c"]),
        Extension("engine._space_parts", ["engine/_space_parts.c"]),
    ]
)
