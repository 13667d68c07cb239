"""Hostile submissions (tests/hostile/): each attack is contained, scored fairly and reported clearly.

Contained: the grader finishes and writes its report, no process of the attack is left, no file outside
the worker's temporary directory changes. Scored fairly: a submission never passes a check that an
honest implementation of the same parts (the built-in NumPy one) fails on the same selection.
Every attack runs isolated, the default for a submission named by a path.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.boundary.isolation.proxy import Limits, load_isolated
from conformance.boundary.isolation.sandbox import landlock_abi
from conformance.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

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


def test_nan_everywhere_is_an_error_on_the_fully_masked_row_conventions_too(certify):
    """Those conventions judge finiteness in the rows whose keys are all masked, so NaN there is their advisory; an
    answer that is NaN where every query sees a key was advisory as well, and earned points for no computation."""
    run = certify(hostile("nan_and_inf"), "-k", "fully_masked_row")
    assert run.statuses() == dict.fromkeys(["fully_masked_row_gives_zero_weights_and_output",
                                            "fully_masked_row_gives_zero_weights_and_only_b_O"], "error"), run.out
    assert all("where no query has every key masked" in m for m in messages(run, "error"))


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
    # failed: its own code answered; an error: its look-up for the suite's files broke (in bubblewrap they are absent)
    assert set(statuses) == {"pe_matches_published_values", "layer_norm_matches_published_example"}
    assert set(statuses.values()) <= {"failed", "error"}


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


@requires_landlock
def test_a_submission_that_looks_for_the_grader_finds_nothing_and_is_scored_on_what_it_computes(certify, tmp_path):
    """detects_grader answers from memory only where it sees a test runner's variables or a parent named like the
    suite: in the worker it sees neither, so it computes, as anywhere else (here the formula, correctly)."""
    selection = "lrate_matches"
    run = certify(hostile("detects_grader"), "-k", selection)
    assert run.with_status("passed") == honest_passes(selection, tmp_path) != set()
    assert not any("hard-coded?" in (c["message"] or "") for c in run.report["checks"])


# -- a submission sees only itself ---------------------------------------------------------------------------
PE = "pe_matches_published_values or pe_position_0"
HONEST_ADAPTER = '''
import _honest
from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.positional_encoding(n, d_model)

    def scaled_dot_product_attention(self, q, k, v, mask):
        return _honest.attention(q, k, v, mask)


adapter = Adapter()
'''
SOLUTION = '''
import numpy as np


def positional_encoding(n, d_model):  # the instructor's, correct
    angle = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe
'''


def course(tmp_path: Path, attacker: str) -> Path:
    """course/reference.py (the instructor's solution), course/class/bob (an honest classmate) and
    course/class/mallory (the attack): mallory's folder."""
    klass = tmp_path / "course" / "class"
    for name, source in (("bob", HONEST_ADAPTER), ("mallory", (HOSTILE / f"{attacker}.py").read_text())):
        (klass / name).mkdir(parents=True)
        (klass / name / "adapter.py").write_text(source)
        shutil.copy(HOSTILE / "_honest.py", klass / name)
    (tmp_path / "course" / "reference.py").write_text(SOLUTION)
    return klass / "mallory"


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def grade(folder: Path, tmp_path: Path, *extra: str) -> dict:
    report = tmp_path / "graded.json"
    main(["grade", str(folder), "--json", str(report), "-k", PE, "--seed", "0", *extra])
    return json.loads(report.read_text())


def walls(report: dict) -> dict:
    """What the grader built around the worker (bubblewrap or not), as the report records it."""
    return report["implementations"][0]["isolation"]["walls"]


def refused_paths(report: dict, what: str) -> set[str]:
    return {r["path"] for r in report["implementations"][0]["isolation"]["refused"] if r["what"] == what}


def wrong_code_statuses(report: dict) -> None:
    """Positions counted from 1: both PE checks fail, as the submission's own code does anywhere."""
    assert {c["id"]: c["status"] for c in report["checks"]} == {
        "pe_matches_published_values": "failed", "pe_position_0_is_sin_0_and_cos_0": "failed"}


@requires_landlock
@pytest.mark.parametrize(("attacker", "target"), [("copies_a_classmate", "class/bob/adapter.py"),
                                                  ("imports_the_solution", "reference.py")])
def test_a_graded_submission_reads_neither_a_classmate_nor_the_solution_above_its_folder(
        tmp_path, capsys, attacker, target):
    folder = course(tmp_path, attacker)
    before = files_under(tmp_path / "course")
    report = grade(folder, tmp_path)
    wrong_code_statuses(report)  # its own code's score: nothing copied, nothing delegated
    assert report["grade"]["reads_confined"] and report["grade"]["score"] == 0
    out = capsys.readouterr().out
    if not walls(report)["bubblewrap"]:  # Landlock refused the read; in bubblewrap the file is not there at all
        assert str(tmp_path / "course" / target) in refused_paths(report, "read")
        assert "sandbox refused (as the worker tells it): " in out and str(tmp_path / "course" / target) in out
    assert files_under(tmp_path / "course") == before  # nothing left behind


@requires_landlock
def test_a_graded_submission_reads_nothing_of_the_home_folder_and_its_output_holds_none_of_it(
        tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("SECRET-KEY-OF-THE-INSTRUCTOR")
    (home / "token.txt").write_text("SECRET-TOKEN-OF-THE-INSTRUCTOR")
    monkeypatch.setenv("INSTRUCTOR_HOME", str(home))  # where the attack looks: a home of the test's own
    folder = tmp_path / "class" / "mallory"
    folder.mkdir(parents=True)
    shutil.copy(HOSTILE / "reads_home.py", folder / "adapter.py")
    shutil.copy(HOSTILE / "_honest.py", folder)
    report = grade(folder, tmp_path, "--pass-env", "INSTRUCTOR_HOME", "--gradescope", str(tmp_path / "results.json"))
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(home)
              and b"SECRET-" in p.read_bytes()]
    assert not leaked and "SECRET-" not in capsys.readouterr().out
    assert set(c["status"] for c in report["checks"]) == {"passed"}  # its PE is honest
    assert {str(home / ".ssh" / "id_ed25519"), str(home / "token.txt")} <= refused_paths(report, "read")


@requires_landlock
@pytest.mark.parametrize("attacker", ["inspects_its_stack", "reads_command_lines"])
def test_a_submission_that_behaves_only_when_graded_cannot_tell_and_scores_its_own_code(tmp_path, capsys, attacker):
    """Each computes correctly only where it finds the grader (on its stack, in its modules, arguments,
    environment, folder, /proc/self; or in another process's command line): it finds nothing."""
    folder = tmp_path / "class" / "mallory"
    folder.mkdir(parents=True)
    shutil.copy(HOSTILE / f"{attacker}.py", folder / "adapter.py")
    shutil.copy(HOSTILE / "_honest.py", folder)
    report = grade(folder, tmp_path)
    wrong_code_statuses(report)
    isolation = report["implementations"][0]["isolation"]
    output = isolation["output_head"]
    assert not any(sign in output for sign in ("conformance", "pytest")), output  # no grader's command line seen
    if isolation["private_proc"]:  # its own PID namespace and /proc: no process but its own (and its supervisor)
        seen = {line for line in output.splitlines() if line.startswith("SEEN")}
        assert seen <= {f"SEEN {sys.executable} -I -B -u - "}, output


@requires_landlock
def test_the_worker_names_no_test_runner_nor_the_suite_where_a_program_looks(tmp_path):
    """Looked at from inside a call: the frames above it, the modules loaded before the implementation, the
    arguments, environment, working folder, process title and command line name neither the suite nor pytest;
    and the suite's own modules (the worker's, the checks, the oracle) cannot be imported under grade."""
    path = tmp_path / "looks_around.py"
    path.write_text(LOOKS_AROUND)
    limits = Limits(hide_suite_code=True, own_folder=str(tmp_path))
    candidate = load_isolated(str(path), timeout_s=30, limits=limits)
    try:
        seen = candidate.adapter.learning_rate(1, 512, 4000)
    finally:
        candidate.adapter.close()
    startup = _startup_modules()  # an editable install's finder among them: any program here has it
    runners = [name for name in seen["modules"] if name not in startup
               and name.split(".")[0] in ("conformance", "pytest", "_pytest", "xdist", "hypothesis", "pluggy")]
    texts = [*seen["frames"], *seen["argv"], *seen["environ"], seen["cwd"], seen["comm"], *seen["cmdline"][1:]]
    named = [text for text in texts if "conformance" in text.lower() or "pytest" in text.lower()]
    assert not named and not runners, (named, runners)
    assert seen["imports"] == {"conformance.boundary.isolation.worker": "refused",
                               "conformance.judging.checks": "refused",
                               "conformance.problems.oracle": "refused", "conformance.adapter": "ok"}


def _startup_modules() -> set[str]:
    """The modules the interpreter itself loads at start (an editable install's finder among them)."""
    done = subprocess.run([sys.executable, "-I", "-c", "import sys; print(' '.join(sys.modules))"],
                          capture_output=True, text=True, check=True)
    return set(done.stdout.split())


LOOKS_AROUND = '''
import sys

BEFORE = sorted(sys.modules)

import importlib
import inspect
import os

from conformance import Conventions


def try_import(name):
    try:
        importlib.import_module(name)
        return "ok"
    except (ImportError, OSError):
        return "refused"


def proc(name):
    try:
        with open(f"/proc/self/{name}", "rb") as file:
            return file.read().decode(errors="replace")
    except OSError as exc:
        return f"unreadable: {exc}"


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def learning_rate(self, step, d_model, warmup):
        frames = []
        for info in inspect.stack()[1:]:
            g = info.frame.f_globals
            frames += [info.filename, info.function, str(g.get("__name__")), str(g.get("__file__")),
                       str(g.get("__doc__"))]
        names = ("conformance.boundary.isolation.worker", "conformance.judging.checks", "conformance.problems.oracle",
                 "conformance.adapter")
        return {"frames": frames, "modules": BEFORE, "argv": sys.argv,
                "environ": [f"{k}={v}" for k, v in os.environ.items()] + proc("environ").split("\\\\0"),
                "cwd": os.getcwd(), "comm": proc("comm"), "cmdline": proc("cmdline").split("\\\\0"),
                "imports": {name: try_import(name) for name in names}}


adapter = Adapter()
'''


@pytest.mark.parametrize("bubblewrap", ["on", "off"])
def test_the_calls_a_socket_filter_alone_misses_are_refused(tmp_path, monkeypatch, bubblewrap):
    """io_uring's sockets, System V IPC, a user namespace, ptrace, the keyrings, x86_64's x32 numbering: refused by
    the worker's seccomp filter, in bubblewrap and without (where System V IPC reached the machine's segments)."""
    from conformance.boundary.isolation import walls

    if bubblewrap == "on" and walls.bubblewrap() is None:
        pytest.skip("bubblewrap is not installed here")
    if bubblewrap == "off":
        monkeypatch.setenv("CONFORMANCE_BUBBLEWRAP", "off")
    report = tmp_path / "report.json"
    main(["grade", hostile("reaches_past_seccomp"), "--json", str(report), "-k", "pe_position_0", "--seed", "0"])
    (check,) = json.loads(report.read_text())["checks"]
    assert check["status"] == "error" and "ALLOWED" not in check["message"], check["message"]
    assert check["message"].count("refused errno") >= 7, check["message"]
