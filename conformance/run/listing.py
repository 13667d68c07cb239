"""``transformer-conformance list``: the checks' pytest node ids, from a shipped index for the reference.

Listing the reference's checks by collecting them costs pytest, hypothesis and torch (the reference loaded
to deselect what it supersedes): seconds, to print names. ``judging/checks/index.json`` holds what that collection
prints, written by ``tools/index_checks.py``; tests/test_cli_startup.py collects again and compares, so the
index cannot go stale unnoticed. ``list IMPL`` for another implementation still collects (what it supersedes
depends on its parts). Nothing here imports more than the standard library.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

INDEXED_IMPL = "reference"
INDEX = os.path.join(os.path.dirname(os.path.dirname(__file__)), "judging", "checks", "index.json")
SUMMARY = re.compile(r"^(?:(?P<selected>\d+)/)?(?P<collected>\d+) tests? collected"
                     r"(?: \((?P<deselected>\d+) deselected\))? in [\d.]+s$")
COLLECT = ("import sys, pytest; from conformance.run.runs import Run; from conformance.run.session import pytest_argv;"
           " sys.exit(int(pytest.main(pytest_argv('--collect-only', '-q'), plugins=[Run([sys.argv[1]])])))")


def read_index(path: str = INDEX) -> dict:
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def render(index: dict, seconds: float) -> str:
    """What ``pytest --collect-only -q`` prints for the indexed collection (pytest's summary line)."""
    checks, collected, deselected = index["checks"], index["collected"], index["deselected"]
    noun = "test" if collected == 1 else "tests"
    counted = f"{len(checks)}/{collected} {noun} collected ({deselected} deselected)" if deselected \
        else f"{collected} {noun} collected"
    return "".join(f"{node_id}\n" for node_id in checks) + f"\n{counted} in {seconds:.2f}s\n"


def print_index() -> int:
    started = time.perf_counter()
    text = render(read_index(), 0.0)
    sys.stdout.write(text.replace(" in 0.00s\n", f" in {time.perf_counter() - started:.2f}s\n"))
    return 0


def collect(impl: str = INDEXED_IMPL) -> str:
    """The listing by collection, in a fresh interpreter, as ``list IMPL`` collects: pytest's output. ``-P``:
    like the console script, no working directory on sys.path (from a checkout it would import ``conformance``
    past the editable install's finder, and pytest would warn that it cannot rewrite it)."""
    import subprocess

    done = subprocess.run([sys.executable, "-P", "-c", COLLECT, impl], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"collecting the checks for {impl} failed (exit {done.returncode}):\n"
                           f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def parse(output: str, impl: str = INDEXED_IMPL) -> dict:
    """The index of a collection's output: its node ids and pytest's counts."""
    lines = output.rstrip("\n").split("\n")
    summary = SUMMARY.match(lines[-1])
    if summary is None or lines[-2] != "":
        raise ValueError(f"not the output of pytest --collect-only -q: ends {lines[-2:]!r}")
    checks = lines[:-2]
    collected, deselected = int(summary["collected"]), int(summary["deselected"] or 0)
    if len(checks) != collected - deselected or "::" not in "".join(checks[:1]):
        raise ValueError(f"{len(checks)} node ids, but pytest says {lines[-1]!r}")
    return {"about": "the node ids `transformer-conformance list` prints for the reference, written by"
                     " tools/index_checks.py (tests/test_cli_startup.py checks it against a collection)",
            "impl": impl, "collected": collected, "deselected": deselected, "checks": checks}
