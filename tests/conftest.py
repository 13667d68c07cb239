"""Helpers for the suite's own tests: run `transformer-conformance certify` in-process and read its report."""

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.cli import main

pytest_plugins = ["pytester"]
# Hostile submissions are data, not tests: one has a conftest.py that would rewrite every report.
collect_ignore = ["hostile"]
ADAPTERS = Path(__file__).parent / "adapters"


@dataclass
class Run:
    code: int
    out: str
    err: str
    report: dict | None

    def statuses(self) -> dict[str, str]:
        return {check["id"]: check["status"] for check in self.report["checks"]}

    def with_status(self, status: str) -> set[str]:
        return {cid for cid, s in self.statuses().items() if s == status}


@pytest.fixture
def certify(tmp_path, capsys):
    """certify("reference", "--no-training") -> Run(code, stdout, stderr, parsed JSON report)."""

    def run(impl: str, *args: str) -> Run:
        report_path = tmp_path / "report.json"
        code = main(["certify", impl, "--json", str(report_path), *args])
        captured = capsys.readouterr()
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        return Run(code, captured.out, captured.err, report)

    return run


def adapter_path(name: str) -> str:
    return str(ADAPTERS / f"{name}.py")


def certify_quietly(folder: Path, impl: str, *args: str) -> dict:
    """Run certify in-process with its output discarded; return the JSON report (for module-scoped fixtures,
    which cannot use capsys)."""
    report_path = folder / "report.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["certify", impl, "--json", str(report_path), "--progress", "off", *args])
    return json.loads(report_path.read_text())


# A failing run that draws every picture but the training curves: the PE table, the checkpoint's attention,
# the schedule, and difference heatmaps (the mutant fails the attention and checkpoint comparisons).
PICTURED_RUN = ("--no-training", "-k",
                "pe_has_one_row or attention or lrate_matches_published_paper or trained_checkpoint")

# nan_attention fails the fully-masked-row checks and passes layer norm: a small run with failures.
FAILING_RUN = ("--no-training", "-k", "fully_masked or layer_norm")
