"""What the installed package says of itself: its version, its license, the files it carries.

Run against an installed wheel (``nox -s test_wheel``) these check the wheel, not the source tree."""

from __future__ import annotations

import re
from importlib import metadata, resources
from importlib.machinery import EXTENSION_SUFFIXES

from engine.corpus import _pretokenize, _tally
from engine.encode import _encoder_core
from engine.formats import _ranks_core
from engine.train import _trainer_core
from engine.train.unigram import _unigram_core
from engine.train.wordpiece import _wordpiece_core
from tests.conftest import ROOT, run_cli


def test_version_is_the_installed_packages():
    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"bpe-tui {metadata.version('bpe-tui')}\n" and done.stderr == ""
    declared = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE)
    assert declared and done.stdout == f"bpe-tui {declared.group(1)}\n"


def test_the_license_is_mit_as_an_spdx_expression():
    meta = metadata.metadata("bpe-tui")
    assert meta["License-Expression"] == "MIT"
    assert "LICENSE" in (meta.get_all("License-File") or [])


def test_the_package_carries_its_data_and_compiled_cores():
    samples = resources.files("bpe_tui.sample_corpora")
    assert (samples / "sample.txt").is_file() and (samples / "toy-low-lower.txt").is_file()
    assert (resources.files("engine") / "py.typed").is_file()
    assert (resources.files("bpe_tui.common") / "tokens.tcss").is_file()
    for core in (_trainer_core, _wordpiece_core, _unigram_core, _encoder_core, _tally, _pretokenize, _ranks_core):
        assert core.__file__ is not None and core.__file__.endswith(tuple(EXTENSION_SUFFIXES)), core.__file__
