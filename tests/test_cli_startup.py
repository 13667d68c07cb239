"""`--help` and `list` start as fast as a bare `import numpy`: they import the standard library alone,
and `list` reads the shipped index of the checks (conformance/judging/checks/index.json), which must equal a
collection."""

import json
import subprocess
import sys

import pytest

from conformance.run import listing

HEAVY = ("numpy", "torch", "hypothesis", "pytest", "conformance.adapter", "conformance.boundary.candidate",
         "conformance.run.plugin", "conformance.boundary.loading", "importlib.metadata")
# conformance.reports and conformance.boundary.isolation (the packages) hold the flags and the limits' defaults,
# stdlib only; none of their modules (renderers, the proxy, the worker) may load.
HEAVY_PREFIXES = ("torch.", "hypothesis.", "_pytest.", "conformance.reports.", "conformance.boundary.isolation.")

PROBE = """
import contextlib, io, json, sys
from conformance.cli import main
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        code = main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def run_main(*argv: str) -> dict:
    """main(argv) in a fresh interpreter (-P: no working directory on sys.path, like the console script)."""
    done = subprocess.run([sys.executable, "-P", "-c", PROBE, json.dumps(argv)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m in HEAVY or m.startswith(HEAVY_PREFIXES)]


@pytest.mark.parametrize("argv", [("--help",), ("certify", "--help"), ("list", "--help"), ("grade", "--help"),
                                  ("report", "--help"), ("mutants", "--help"), ("template", "--help")])
def test_help_imports_only_the_standard_library(argv):
    run = run_main(*argv)
    assert run["code"] == 0 and "usage: transformer-conformance" in run["out"]
    assert heavy(run["modules"]) == []


def test_list_reads_the_index_without_pytest_hypothesis_or_torch():
    run = run_main("list")
    assert run["code"] == 0
    assert heavy(run["modules"]) == []
    index = listing.read_index()
    assert run["out"].splitlines()[:-2] == index["checks"]
    assert run["out"].splitlines()[-1].startswith(f"{len(index['checks'])}/{index['collected']} tests collected")


def test_the_index_is_what_collecting_the_checks_prints():
    """The guard that the index never goes stale: a real collection (pytest, hypothesis, the reference loaded).
    If this fails after changing the checks: python tools/index_checks.py"""
    collected = listing.collect(listing.INDEXED_IMPL)
    assert listing.parse(collected) == listing.read_index(), "stale index: run python tools/index_checks.py"
    printed = run_main("list")["out"]
    assert printed.rsplit(" in ", 1)[0] == collected.rsplit(" in ", 1)[0]  # all but pytest's timing


def test_render_follows_pytest_summary_without_deselection():
    text = listing.render({"checks": ["a.py::t[x]"], "collected": 1, "deselected": 0}, 0.0)
    assert text == "a.py::t[x]\n\n1 test collected in 0.00s\n"
    assert listing.parse(text)["checks"] == ["a.py::t[x]"]


def test_list_of_another_implementation_still_collects(capsys):
    from conformance.cli import main

    assert main(["list", "mutant:attention_no_scaling"]) == 0
    out = capsys.readouterr().out
    assert "test_attention.py::test_attention_matches_formula[mutant:attention_no_scaling]" in out
    assert "tests collected" in out
