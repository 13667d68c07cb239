"""Hostile submissions (tests/hostile/): each attack is contained, scored fairly and reported clearly.

Contained: the grader finishes and writes its report, no process of the attack is left, no file outside
the worker's temporary directory changes. Scored fairly: a submission never passes a check that an
honest implementation of the same parts (the built-in NumPy one) fails on the same selection.
Every attack runs isolated, the default for a submission named by a path.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conformance.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from conformance.isolation.proxy import load_isolated
from conformance.isolation.sandbox import landlock_abi

HOSTILE = Path(__file__).parent / "hostile"
LANDLOCK = landlock_abi()
requires_landlock = pytest.mark.skipif(LANDLOCK < 1, reason="this kernel has no Landlock: file access is not confined")
LAYER_NORM = "layer_norm_matches_published_example or layer_norm_matches_formula"
_HONEST: dict[str, set[str]] = {}


def hostile(name: str) -> str:
    return str(HOSTILE / f"{name}.py")


def honest_passes(selection: str, tmp_path: Path) -> set[str]:
    """The checks the built-in NumPy implementation passes on ``selection`` (cached per selection)."""
    if selection not in _HONEST:
        report = tmp_path / "honest.json"
        main(["certify", "numpy", "--no-training", "-k", selection, "--json", str(report)])
        _HONEST[selection] = {c["id"] for c in json.loads(report.read_text())["checks"] if c["status"] == "passed"}
    return _HONEST[selection]


def assert_fair(run, selection: str, tmp_path: Path) -> None:
    unearned = run.with_status("passed") - honest_passes(selection, tmp_path)
    assert not unearned, f"passed where an honest implementation fails: {sorted(unearned)}"


def messages(run, status: str) -> list[str]:
    return [check["message"] for check in run.report["checks"] if check["status"] == status]


# -- exits and crashes --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["exit_at_import", "os_exit_at_import"])
def test_an_exit_at_import_is_a_load_error_and_the_report_is_written(certify, name):
    run = certify(hostile(name))
    assert run.code == EXIT_USAGE
    assert "the implementation exited with status 0 while being imported" in run.err
    assert run.report["verdict"] == {hostile(name): "not conformant"}
    assert "exited with status 0 while being imported" in run.report["checks"][0]["message"]


def test_an_exit_at_import_shows_what_the_script_printed(certify):
    run = certify(hostile("exit_at_import"))
    assert "training my transformer ... done" in run.err


def test_os_exit_mid_call_errors_that_check_and_a_fresh_worker_serves_the_next(certify, tmp_path):
    selection = "pe_matches_published_values or pe_position_0 or layer_norm_matches_published_example"
    run = certify(hostile("os_exit_mid_call"), "-k", selection)
    assert run.with_status("error") == {"pe_matches_published_values", "pe_position_0_is_sin_0_and_cos_0"}
    assert all("exited with status 0 while running positional_encoding" in m for m in messages(run, "error"))
    assert run.with_status("passed") == {"layer_norm_matches_published_example"}
    assert run.report["implementations"][0]["isolation"]["restarts"] >= 1
    assert_fair(run, selection, tmp_path)


@pytest.mark.parametrize("isolation", ["--isolate", "--no-isolate"])
def test_an_atexit_handler_calling_os_exit_0_cannot_turn_a_failure_into_exit_0(isolation):
    command = [sys.executable, "-m", "conformance", "certify", hostile("atexit_exit_zero"), isolation,
               "-k", "layer_norm_matches_published_example"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert "1 failed" in done.stdout
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr


# -- time, memory, signals, processes, output --------------------------------------------------------
@pytest.mark.parametrize("name", ["infinite_loop", "ignores_sigterm"])
def test_a_part_that_never_returns_is_killed_and_reported_as_hung(certify, name):
    run = certify(hostile(name), "-k", LAYER_NORM, "--timeout", "1")
    assert run.with_status("error") == {"layer_norm_matches_published_example", "layer_norm_matches_formula"}
    assert any("hung" in m for m in messages(run, "error"))
    assert run.code == EXIT_FAILED


def test_a_memory_bomb_runs_into_the_workers_memory_limit(certify):
    run = certify(hostile("memory_bomb"), "-k", "layer_norm_matches_published_example", "--worker-memory", "1024")
    (message,) = messages(run, "error")
    assert "MemoryError" in message and "memory limit" in message


def test_no_process_the_submission_started_outlives_the_run(certify, tmp_path):
    selection = "pe_matches_published_values or pe_position_0"
    run = certify(hostile("background_process"), "-k", selection)
    assert run.with_status("passed") == {"pe_matches_published_values", "pe_position_0_is_sin_0_and_cos_0"}
    assert not processes_with("313.1415")  # background_process.MARKER: sleep's argument
    assert_fair(run, selection, tmp_path)


def processes_with(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and marker in argv:
            found.append(f"{entry.name}: {argv}")
    return found


def test_gigabytes_of_stdout_stop_at_the_file_size_limit(certify):
    run = certify(hostile("stdout_flood"), "-k", "layer_norm_matches_published_example")
    (message,) = messages(run, "error")
    assert "File too large" in message and "file-size limit" in message
    assert run.report["implementations"][0]["isolation"]["output_bytes"] <= 64 * 2**20
    assert len(run.out) < 100_000  # the grader's own output is not flooded


@pytest.mark.skipif(LANDLOCK < 6, reason="signal scoping needs Landlock ABI 6 (Linux 6.12)")
def test_the_submission_cannot_kill_the_grader(certify, tmp_path):
    selection = "pe_matches_published_values or pe_position_0"
    run = certify(hostile("kills_grader"), "-k", selection)
    assert run.code == EXIT_OK and run.report is not None
    assert_fair(run, selection, tmp_path)


def test_a_worker_that_names_the_grader_as_itself_is_not_believed(certify, tmp_path):
    """Believed, the lie would have the grader copy large messages to and from its own memory (peer.py)."""
    run = certify(hostile("lies_about_its_pid"), "-k", LAYER_NORM)
    assert run.with_status("passed") == {"layer_norm_matches_published_example", "layer_norm_matches_formula"}
    assert_fair(run, LAYER_NORM, tmp_path)
    candidate = load_isolated(hostile("lies_about_its_pid"), timeout_s=30)
    try:
        x = np.random.default_rng(0).standard_normal((4, 512, 512))  # 8 MB each way: over wire.DIRECT_MIN
        gamma, beta = np.ones(512), np.zeros(512)
        assert np.allclose(candidate.adapter.layer_norm(x, gamma, beta, 1e-6), _honest_layer_norm(x, 1e-6))
        assert candidate.adapter._hello["pid"] == os.getpid() and candidate.adapter._worker.pid is None
    finally:
        candidate.adapter.close()


def _honest_layer_norm(x, eps):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


# -- the comparisons stay the grader's ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "selection"),
    [
        ("patches_numpy", LAYER_NORM),
        ("patches_torch", LAYER_NORM),
        ("patches_math", "lrate_matches_published_paper_table or lrate_matches_formula_for_any_step"),
        ("patches_ndarray_eq", "pe_matches_published_values or pe_matches_formula_for_any_size"),
        ("ndarray_subclass", LAYER_NORM),
        ("mutates_inputs", LAYER_NORM),
    ],
)
def test_patched_comparisons_and_rewritten_inputs_do_not_reach_the_grader(certify, tmp_path, name, selection):
    run = certify(hostile(name), "-k", selection)
    assert run.statuses() and set(run.statuses().values()) == {"failed"}, run.statuses()
    assert run.code == EXIT_FAILED
    assert_fair(run, selection, tmp_path)


def test_answers_are_copied_at_the_boundary_so_later_scribbles_change_nothing(certify, tmp_path):
    run = certify(hostile("output_views_input"), "-k", LAYER_NORM)
    assert run.with_status("passed") == honest_passes(LAYER_NORM, tmp_path)


def test_a_tensor_subclass_never_crosses_the_boundary(certify):
    run = certify(hostile("tensor_subclass"), "-k", "layer_norm_matches_published_example")
    (message,) = messages(run, "error")
    assert "AgreeableTensor" in message and "expected numpy.ndarray" in message and "detach()" in message


def test_nan_and_inf_are_errors_naming_the_non_finite_values(certify):
    run = certify(hostile("nan_and_inf"), "-k", "layer_norm_matches_published_example or pe_matches_published"
                                                  " or lrate_matches_published_paper_table")
    assert set(run.statuses().values()) == {"error"}
    assert sum("non-finite values" in m for m in messages(run, "error")) == 2
    assert any("returned float (inf); expected a finite Python float" in m for m in messages(run, "error"))


def test_values_of_the_wrong_type_are_errors_naming_the_type(certify):
    run = certify(hostile("wrong_types"), "-k", "layer_norm_matches_published_example or pe_matches_published"
                  " or lrate_matches_published_paper_table or smoothed_loss_matches_formula or params.total]")
    text = "\n".join(messages(run, "error"))
    assert set(run.statuses().values()) == {"error"}
    for described in ("returned list", "LooksLikeAnArray", "returned str ('0.001')", "returned generator",
                      "returned dict"):
        assert described in text


# -- files: the submission's folder, forged reports, the suite's secrets -----------------------------
def test_a_conftest_in_the_submission_folder_is_never_imported(certify, tmp_path, monkeypatch):
    folder = shutil.copytree(HOSTILE / "conftest_marks_passed", tmp_path / "submission")
    monkeypatch.chdir(folder)
    run = certify(str(folder / "adapter.py"), "-k", LAYER_NORM)
    assert set(run.statuses().values()) == {"failed"}
    assert not (folder / "CONFTEST_WAS_IMPORTED").exists()


@requires_landlock
def test_forged_reports_land_nowhere_and_the_grader_writes_its_own(tmp_path, monkeypatch, capsys):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    report = tmp_path / "out" / "report.json"
    code = main(["certify", hostile("forges_reports"), "-k", "layer_norm_matches_published_example",
                 "--json", str(report)])
    assert code == EXIT_FAILED
    assert json.loads(report.read_text())["checks"][0]["status"] == "failed"
    forged = [p for p in [*tmp_path.rglob("*"), *map(Path, ("/tmp/report.json", "/tmp/results.json"))]
              if p.is_file() and "FORGED-BY-HOSTILE-ADAPTER" in p.read_text(errors="replace")]
    assert not forged


@requires_landlock
def test_a_graded_submission_cannot_read_the_golden_files_reference_or_oracle(tmp_path, capsys):
    selection = "pe_matches_published_values or layer_norm_matches_published_example"
    report = tmp_path / "report.json"
    main(["grade", hostile("reads_golden_files"), "--json", str(report), "-k", selection, "--seed", "0"])
    statuses = {c["id"]: c["status"] for c in json.loads(report.read_text())["checks"]}
    assert statuses == {"pe_matches_published_values": "failed", "layer_norm_matches_published_example": "failed"}


# -- answers from memory -------------------------------------------------------------------------------
def test_hard_coded_published_numbers_fail_every_twin_and_the_report_says_so(certify, tmp_path):
    selection = "lrate_matches or published_layer_norm_example or layer_norm_matches"
    run = certify(hostile("hard_coded"), "-k", selection)
    assert {"published_layer_norm_example", "lrate_matches_published_paper_table"} <= run.with_status("passed")
    twins = {check["id"]: check for check in run.report["checks"]
             if check["id"] in ("layer_norm_matches_formula", "lrate_matches_formula_for_any_step")}
    assert {check["status"] for check in twins.values()} == {"failed"}
    assert all("not the formula on fresh inputs: hard-coded?" in check["message"] for check in twins.values())
    assert_fair(run, selection, tmp_path)


def test_a_submission_that_detects_the_grader_is_scored_on_what_it_answers(certify, tmp_path):
    selection = "lrate_matches"
    run = certify(hostile("detects_grader"), "-k", selection)
    assert "lrate_matches_published_toy_values" in run.with_status("passed")
    (twin,) = [c for c in run.report["checks"] if c["id"] == "lrate_matches_formula_for_any_step"]
    assert twin["status"] == "failed" and "hard-coded?" in twin["message"]
    assert_fair(run, selection, tmp_path)
