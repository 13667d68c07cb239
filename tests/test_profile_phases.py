"""CONFORMANCE_PROFILE (conformance/run/timing.py): a certify run writes where its time went, every phase present, the
phases adding up to no more than the run's wall time. In a fresh process: profiling wraps ``builtins.__import__``
and the suite's own functions for the rest of the process, which this test run must not inherit."""

import json
import os
import subprocess
import sys
import time

import pytest

from conformance.run.timing import PHASES

# A failing property check explained by the diagnosis (the mutant drops 1/sqrt(d_k)) beside passing plain checks.
SELECTION = "attention_matches_formula or explorer_shape"


@pytest.fixture(scope="module")
def profiled_certify(tmp_path_factory) -> tuple[dict, float]:
    """One profiled run for both tests (a run is a few seconds, most of it importing torch)."""
    tmp_path = tmp_path_factory.mktemp("profiled")
    profile = tmp_path / "phases.json"
    env = {**os.environ, "CONFORMANCE_PROFILE": str(profile)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "conformance", "certify", "mutant:attention_no_scaling",
                           "--no-training", "-k", SELECTION, "--json", str(tmp_path / "report.json"),
                           "--progress", "off"], env=env, capture_output=True, text=True, cwd=tmp_path)
    wall = time.perf_counter() - started
    assert done.returncode == 1, done.stderr[-2000:]
    return json.loads(profile.read_text()), wall


def test_the_phases_add_up_to_the_run_and_each_is_measured(profiled_certify):
    data, wall = profiled_certify
    phases = data["phases"]
    assert set(phases) == set(PHASES)
    assert sum(phases.values()) <= data["wall_s"] + 1e-3 <= wall + 1e-3
    spent = {name for name, seconds in phases.items() if seconds > 0}
    assert spent >= {"imports", "collection", "hypothesis_checks", "plain_checks", "candidate_calls",
                     "oracle_calls", "diagnosis", "report", "other"}


def test_each_check_is_listed_with_its_kind_status_and_share(profiled_certify):
    data, _ = profiled_certify
    checks = {check["id"]: check for check in data["checks"]}
    failing = checks["attention_matches_formula"]
    assert (failing["kind"], failing["status"]) == ("hypothesis_checks", "failed")
    assert failing["phases"]["diagnosis"] > 0
    plain = [check for cid, check in checks.items() if cid.startswith("explorer_shape")]
    assert plain and all((c["kind"], c["status"]) == ("plain_checks", "passed") for c in plain)
    assert sum(check["total_s"] for check in checks.values()) <= data["wall_s"]
