"""Held-out cases for the dropout-placement checks (expected.toml says where they come from and what each must
get): a faithful case fails neither check, a misplaced one fails at least one. Each case is certified as a user
certifies it (``python -m conformance certify CASE -k dropout_acts``, isolated). About 40 s a case; collected only
with RUN_HELDOUT_DROPOUT=1 (tests/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).parent
CASES = tomllib.loads((HERE / "expected.toml").read_text())["case"]


def statuses(case: str, args: list[str], tmp_path: Path) -> dict[str, str]:
    report = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "conformance", "certify", str(HERE / f"{case}.py"), "-k",
                          "dropout_acts", "--progress", "off", "--json", str(report), *args],
                         capture_output=True, text=True, timeout=900)
    assert report.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    return {check["id"]: check["status"] for check in json.loads(report.read_text())["checks"]}


@pytest.mark.parametrize("case", [pytest.param(name, marks=pytest.mark.xfail(reason=spec["known"], strict=True))
                                  if "known" in spec else name for name, spec in CASES.items()])
def test_the_dropout_checks_get_the_case_right(case, tmp_path):
    spec = CASES[case]
    got = statuses(case, spec.get("args", []), tmp_path)
    assert len(got) == 2, got  # both checks ran: no load error
    allowed = {"blocked"} if "blocked" in spec else {"error"} if "error" in spec else set()
    if spec["faithful"]:
        assert "failed" not in got.values() and set(got.values()) <= {"passed"} | allowed, got
    else:
        assert "failed" in got.values() or set(got.values()) <= allowed, got
