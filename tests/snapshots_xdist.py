"""The snapshot report of a run in pytest-xdist's workers, as one process prints it.

syrupy (4.8, which pytest-textual-snapshot pins) prints no report under xdist: the
controller runs no test, and a worker cannot tell alone whether a snapshot is unused or was
used by a test on another worker. A snapshot that differs still fails its test wherever it
runs; only the summary, and the snapshots no test used, would go unsaid.

A worker's own report is exact for a test file it ran whole, as ``--dist loadfile`` runs
every file. So each worker sends its counts, its unused snapshots and the snapshot test
files it ran to the controller, which prints them as one report and, unless
``--snapshot-warn-unused`` (or ``--snapshot-update``) is given, fails the run on an unused
snapshot, as syrupy does in one process. A file whose tests ran on more than one worker
(``--dist load``) is named as not looked at rather than reported wrongly. Workers do not
delete unused snapshots: ``-n 0 --snapshot-update`` does. From syrupy 5.5 on, which reports
under xdist itself, this plugin stands aside.
"""

from __future__ import annotations

import re
from collections import Counter
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest


def _syrupy_reports_under_xdist() -> bool:
    try:
        found = re.match(r"(\d+)\.(\d+)", version("syrupy"))
    except PackageNotFoundError:
        return True  # no snapshots to report
    return found is None or (int(found[1]), int(found[2])) >= (5, 5)


SYRUPY_REPORTS = _syrupy_reports_under_xdist()
"""syrupy 5.5 and later report unused snapshots under xdist themselves."""

KEY = "snapshot_report"
"""The worker's entry in ``workeroutput``."""
_reports = pytest.StashKey[list[dict[str, Any]]]()
_lost = pytest.StashKey[list[str]]()
_ran = pytest.StashKey[set[str]]()


def _uses_snapshots(item: pytest.Item) -> bool:
    return "snapshot" in getattr(item, "fixturenames", ())


def pytest_runtest_protocol(item: pytest.Item) -> None:
    """In a worker, note the test files of the snapshot tests it runs (or skips)."""
    if not SYRUPY_REPORTS and hasattr(item.config, "workeroutput") and _uses_snapshots(item):
        item.config.stash.setdefault(_ran, set()).add(_rel(item.path, item.config.rootpath))


def _rel(path: str | Path, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return str(path)


@pytest.hookimpl(trylast=True)  # after syrupy's own, which makes the worker's report
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if SYRUPY_REPORTS:
        return
    if hasattr(config, "workeroutput"):
        report = getattr(getattr(config, "_syrupy", None), "report", None)
        if report is None:
            return
        xfailed = getattr(report, "_num_xfails", 0)
        config.workeroutput[KEY] = {
            "failed": report.num_failed - xfailed,
            "xfailed": xfailed,
            "passed": report.num_matched,
            "created": report.num_created,
            "updated": report.num_updated,
            "unused": {
                _rel(collection.location, config.rootpath): sorted(snapshot.name for snapshot in collection) for collection in report.unused
            },
            "files": sorted(config.stash.get(_ran, set())),
        }
    elif config.stash.get(_reports, None) is not None and session.exitstatus == pytest.ExitCode.OK:
        if _unused(config) and not _quiet(config):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # as syrupy fails a run in one process


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """A worker is done: keep its report (a worker that crashed sends none)."""
    if SYRUPY_REPORTS:
        return
    config = node.config
    output = getattr(node, "workeroutput", None) or {}
    if KEY in output:
        config.stash.setdefault(_reports, []).append(output[KEY])
    elif error is not None:
        config.stash.setdefault(_lost, []).append(node.gateway.id)


def _file(path: str) -> tuple[Path, str]:
    """A test file as its folder and its name without ``.py``."""
    return Path(path).parent, Path(path).stem


def _test_file(location: str) -> tuple[Path, str]:
    """The test file a snapshot location is of: ``tests/__snapshots__/test_x/name.svg`` and
    ``tests/__snapshots__/test_x.ambr`` are ``tests/test_x.py``'s."""
    parts = Path(location).parts
    at = parts.index("__snapshots__") if "__snapshots__" in parts else len(parts) - 1
    return Path(*parts[:at]), Path(parts[min(at + 1, len(parts) - 1)]).stem


def _workers_of(config: pytest.Config) -> Counter[tuple[Path, str]]:
    """How many workers ran each snapshot test file."""
    return Counter(_file(file) for report in config.stash[_reports] for file in report["files"])


def _split(config: pytest.Config) -> list[str]:
    """The snapshot test files whose tests ran on more than one worker: no worker saw all of them."""
    workers = _workers_of(config)
    return sorted({file for report in config.stash[_reports] for file in report["files"] if workers[_file(file)] > 1})


def _unused(config: pytest.Config) -> dict[str, set[str]]:
    """The unused snapshots by location. A worker judges a test file's snapshots as one
    process would when it ran the whole file, or when no worker ran any of it (the file was
    deleted, or deselected): then every worker that looked judges it alike."""
    workers = _workers_of(config)
    unused: dict[str, set[str]] = {}
    for report in config.stash[_reports]:
        own = {_file(file) for file in report["files"]}
        for location, names in report["unused"].items():
            file = _test_file(location)
            if workers[file] == 0 or (workers[file] == 1 and file in own):
                unused.setdefault(location, set()).update(names)
    return unused


def _quiet(config: pytest.Config) -> bool:
    """Whether an unused snapshot is only a warning."""
    return bool(config.option.warn_unused_snapshots or config.option.update_snapshots)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    reports = config.stash.get(_reports, None)
    if reports is None:
        return
    counts = {key: sum(report[key] for report in reports) for key in ("failed", "xfailed", "passed", "created", "updated")}
    unused = _unused(config)
    total = sum(len(names) for names in unused.values())
    said = [
        f"{n} {'snapshot' if n == 1 else 'snapshots'} {what}."
        for n, what in [
            (counts["failed"], "failed"),
            (counts["xfailed"] if counts["failed"] else 0, "xfailed"),
            (counts["passed"], "passed"),
            (counts["created"], "generated"),
            (counts["updated"], "updated"),
            (total, "unused"),
        ]
        if n
    ]
    split, lost = _split(config), config.stash.get(_lost, [])
    if not said and not split and not lost:
        return
    terminalreporter.write_sep("-", "snapshot report summary")
    terminalreporter.write_line(" ".join(said))
    if total:
        quiet = _quiet(config)
        terminalreporter.write_line("")
        if config.option.include_snapshot_details:
            for location, names in sorted(unused.items()):
                terminalreporter.write_line(f"Unused {', '.join(sorted(names))} ({location})", yellow=quiet, red=not quiet)
        terminalreporter.write_line(
            "Re-run pytest with -n 0 --snapshot-update to delete unused snapshots (workers do not delete them).",
            yellow=quiet,
            red=not quiet,
        )
    if split:
        terminalreporter.write_line(
            f"Unused snapshots not looked for in {', '.join(sorted(split))}: the tests of each ran on more than one worker "
            "(--dist loadfile keeps a file's tests on one).",
            yellow=True,
        )
    if lost:
        terminalreporter.write_line(f"No snapshot report from {', '.join(sorted(lost))}, which stopped: this one is partial.", yellow=True)
