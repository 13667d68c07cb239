"""Interrupted grades and ``grade CLASS --resume``: an interrupted submission's report says incomplete and earns
nothing, a rerun keeps the finished reports of the same run, a summary is of one run only, and nothing is left in
the temporary folder after any exit (SIGKILL included).

Each class runs in a process of its own (as ``test_grading.grade_class``) and in a session of its own, so that a
Ctrl-C can be sent as a terminal sends it: to the class process and the graders it forked together."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import adapter_path
from test_grading import HOSTILE, PE_ONLY, ROOT, check_schema, submission

REPORT_SCHEMA = json.loads((ROOT / "reports" / "report.schema.json").read_text())

STUDENTS = ("ada", "bo", "cy")


def start_class(klass: Path, out: Path, *options: str, tmpdir: Path | None = None) -> subprocess.Popen:
    """``grade CLASS --jobs 1`` (the students graded in order, one at a time), in a session of its own."""
    command = [sys.executable, "-m", "conformance", "grade", str(klass), "--out", str(out), "-k", PE_ONLY,
               "--jobs", "1", *options]
    env = {**os.environ, **({"TMPDIR": str(tmpdir)} if tmpdir else {})}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)


def run_class(klass: Path, out: Path, *options: str) -> tuple[int, str]:
    process = start_class(klass, out, *options)
    output, _ = process.communicate(timeout=600)
    return process.returncode, output


def read_until(process: subprocess.Popen, prefix: str) -> str:
    """The class's output up to and including its first line that starts with ``prefix``."""
    seen = []
    for line in process.stdout:
        seen.append(line)
        if line.startswith(prefix):
            return "".join(seen)
    raise AssertionError(f"expected a line starting {prefix!r}, got the end of the output:\n{''.join(seen)}")


def a_class(root: Path) -> Path:
    """ada (computes), bo (hangs in a call: 60 s before its timeout, time to interrupt it), cy (computes)."""
    klass = root / "class"
    submission(klass, "ada", adapter_path("only_pe"))
    submission(klass, "bo", str(HOSTILE / "infinite_loop.py"))
    submission(klass, "cy", adapter_path("only_pe"))
    return klass


def report(out: Path, name: str) -> dict:
    return json.loads((out / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A class stopped by Ctrl-C while bo's grade hangs: ada finished, bo interrupted, cy not begun.
    (class folder, out folder, exit code, output); tests copy ``out`` before changing it."""
    root = tmp_path_factory.mktemp("interrupted")
    klass, out = a_class(root), root / "grades"
    process = start_class(klass, out, "--seed", "7")
    try:
        output = read_until(process, "[1/3] ada")
        time.sleep(4)  # bo's grader is in its hanging call
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C at the terminal: the class and its graders
        rest, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return klass, out, process.returncode, output + rest


def test_ctrl_c_leaves_the_interrupted_submission_incomplete_with_0_points_and_the_summary_says_so(interrupted):
    klass, out, code, output = interrupted
    assert code == 130, output  # as a shell reports a command that SIGINT ended
    ada, bo, cy = (report(out, name) for name in STUDENTS)
    assert ada["complete"] is True and ada["grade"]["score"] == 2, ada.get("grade")
    assert bo["complete"] is False and bo["grade"]["score"] == 0, bo.get("grade")
    assert "interrupted by SIGINT" in bo["incomplete"], bo["incomplete"]
    assert check_schema(bo, REPORT_SCHEMA) == []  # what was judged before the interrupt, in the documented form
    assert cy["complete"] is False and "before its turn" in cy["incomplete"], cy.get("incomplete")
    rows = {row.split(",")[0]: row.split(",") for row in (out / "summary.csv").read_text().splitlines()[1:]}
    assert rows["ada"][1:4] == ["2.0", "3.0", "conformant"], rows
    assert rows["bo"][1:4] == ["0", "", "incomplete"] and "interrupted by SIGINT" in rows["bo"][-1], rows
    assert "grade them again with --resume" in (out / "summary.md").read_text()
    assert "--resume" in output


def test_summarise_marks_an_interrupted_report_incomplete(interrupted, tmp_path):
    from conformance.cli import main

    _, out, _, _ = interrupted
    assert main(["grade", "--summarise", str(out / "bo.json"), str(out / "ada.json"), "--out", str(tmp_path)]) == 0
    rows = (tmp_path / "summary.csv").read_text().splitlines()
    assert rows[1].startswith("ada,2.0,3.0,conformant") and rows[2].startswith("bo,0,,incomplete"), rows


def test_resume_grades_only_the_unfinished_and_keeps_the_finished_reports_as_they_were(interrupted, tmp_path):
    klass, interrupted_out, _, _ = interrupted
    out = tmp_path / "grades"
    shutil.copytree(interrupted_out, out)
    ada_before = (out / "ada.json").read_bytes()
    fixed_class = tmp_path / "class"
    shutil.copytree(klass, fixed_class)
    shutil.copy(adapter_path("only_pe"), fixed_class / "bo" / "adapter.py")  # bo's regrade must not hang 60 s a call
    code, output = run_class(fixed_class, out, "--resume")  # no --seed: the reports' seed (7)
    assert code == 0, output
    assert "kept 1 finished reports" in output and "seed 7" in output, output
    assert "bo (incomplete: interrupted by SIGINT" in output and "cy (incomplete: not graded" in output, output
    assert "grading 2 submissions" in output and "[1/2] bo" in output and "] ada:" not in output, output
    assert (out / "ada.json").read_bytes() == ada_before  # kept, byte for byte
    for name in STUDENTS:
        assert report(out, name)["complete"] is True and report(out, name)["run"]["seed"] == 7, name
    rows = (out / "summary.csv").read_text().splitlines()[1:]
    assert [row.split(",")[:4] for row in rows] == [[name, "2.0", "3.0", "conformant"] for name in STUDENTS], rows


def test_resume_refuses_reports_of_two_seeds_without_seed_and_regrades_the_other_seed_with_one(interrupted, tmp_path):
    _, interrupted_out, _, _ = interrupted
    out = tmp_path / "grades"
    shutil.copytree(interrupted_out, out)
    ada = report(out, "ada")
    ada["run"]["seed"] = 9  # as if ada had been graded by another run into the same folder
    (out / "ada.json").write_text(json.dumps(ada))
    empty = tmp_path / "class"  # the same names; nothing is graded when refused, all three with --seed 7
    for name in STUDENTS:
        submission(empty, name, adapter_path("only_pe"))
    code, output = run_class(empty, out, "--resume")
    assert code == 2, output
    assert "seed 7: bo, cy" in output and "seed 9: ada" in output and "--seed SEED" in output, output
    assert not (out / "summary.csv").exists() or "incomplete" in (out / "summary.csv").read_text()  # untouched
    code, output = run_class(empty, out, "--resume", "--seed", "7")
    assert code == 0, output
    assert "ada (seed 9 (this run: 7))" in output, output
    assert report(out, "ada")["run"]["seed"] == 7 and report(out, "ada")["complete"] is True


def test_a_summary_of_reports_of_two_runs_is_of_one_and_names_the_other(interrupted, tmp_path, capsys):
    from conformance.cli import main

    _, interrupted_out, _, _ = interrupted
    reports = tmp_path / "reports"
    shutil.copytree(interrupted_out, reports)
    ada = report(reports, "ada")
    ada["run"]["seed"] = 9
    (reports / "ada.json").write_text(json.dumps(ada))
    assert main(["grade", "--summarise", str(reports), "--out", str(tmp_path / "summary")]) == 0
    rows = (tmp_path / "summary" / "summary.csv").read_text().splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == ["bo", "cy"], rows  # seed 7's: ada's seed 9 not mixed in
    warning = capsys.readouterr().err
    assert "ada: seed 9 (this run: 7)" in warning, warning


def grader_of(class_pid: int, log: Path) -> int:
    """The grader the class process forked that writes ``log`` (its output file)."""
    children = Path(f"/proc/{class_pid}/task/{class_pid}/children").read_text().split()
    for pid in map(int, children):
        fds = Path(f"/proc/{pid}/fd")
        for fd in (fds.iterdir() if fds.is_dir() else ()):
            try:
                if os.readlink(fd) == str(log):
                    return pid
            except OSError:
                continue
    raise AssertionError(f"expected a grader of {class_pid} writing {log}, got none among {children}")


def test_sigterm_to_the_class_process_alone_stops_its_graders_and_marks_the_unfinished_incomplete(tmp_path):
    klass, out = a_class(tmp_path), tmp_path / "grades"
    process = start_class(klass, out, "--seed", "7")
    try:
        output = read_until(process, "[1/3] ada")
        time.sleep(4)
        process.terminate()  # as a scheduler or `kill` stops it: the graders get nothing but what the class sends
        rest, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 143, output + rest
    bo = report(out, "bo")
    assert bo["complete"] is False and bo["grade"]["score"] == 0 and "SIGTERM" in bo["incomplete"], bo["incomplete"]
    assert report(out, "cy")["complete"] is False and report(out, "ada")["complete"] is True


def test_a_grader_killed_mid_grade_leaves_an_incomplete_report_and_the_class_goes_on(tmp_path):
    klass, out = a_class(tmp_path), tmp_path / "grades"
    process = start_class(klass, out, "--seed", "7")
    try:
        output = read_until(process, "[1/3] ada")
        time.sleep(4)
        os.kill(grader_of(process.pid, out / "bo.txt"), signal.SIGKILL)  # as the out-of-memory killer would
        rest, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 3, output + rest  # not every submission has a complete report
    bo = report(out, "bo")
    assert bo["complete"] is False and bo["grade"]["score"] == 0, bo.get("grade")
    assert "killed by SIGKILL before finishing its report" in bo["incomplete"], bo["incomplete"]
    assert "[2/3] bo: incomplete, 0 points" in rest and report(out, "cy")["complete"] is True, rest
    rows = {row.split(",")[0]: row for row in (out / "summary.csv").read_text().splitlines()[1:]}
    assert rows["bo"].startswith("bo,0,,incomplete") and rows["cy"].startswith("cy,2.0,3.0,conformant"), rows


# -- SIGKILL -------------------------------------------------------------------------------------------
def killed_class(root: Path) -> tuple[Path, Path, list[str]]:
    """A class graded into a folder that holds an older run's summary (seed 5), its process SIGKILLed while bo's
    grader hangs; after a few seconds: (out, TMPDIR, what is left in TMPDIR)."""
    klass, out, tmpdir = a_class(root), root / "grades", root / "tmp"
    tmpdir.mkdir()
    out.mkdir()
    (out / "summary.csv").write_text("student,score,max_score,verdict,seed\nada,3.0,3.0,conformant,5\n")
    (out / "summary.md").write_text("# Class summary\n\nseed 5\n")
    process = start_class(klass, out, "--seed", "7", tmpdir=tmpdir)
    try:
        read_until(process, "[1/3] ada")
        time.sleep(4)
        process.kill()  # the class process alone, as the out-of-memory killer would
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
    time.sleep(5)  # its graders die with it; the janitor then removes what they made
    return out, tmpdir, sorted(os.listdir(tmpdir))


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    return killed_class(tmp_path_factory.mktemp("killed"))


def isolation_folders(names: list[str]) -> list[str]:
    """The isolation's own folders (the warm process's and each worker's, ``tempfile.mkdtemp()``'s ``tmp*``): the
    sandbox removes them (boundary/isolation), not the grading."""
    return [name for name in names if name.startswith("tmp")]


def test_after_sigkill_no_summary_of_an_older_run_sits_beside_the_new_reports(killed):
    out, _, _ = killed
    assert not (out / "summary.csv").exists() and not (out / "summary.md").exists(), "a stale summary (seed 5) is left"
    assert report(out, "ada")["run"]["seed"] == 7 and report(out, "ada")["complete"] is True
    bo = json.loads((out / "bo.json").read_text()) if (out / "bo.json").exists() else {}
    assert bo.get("complete") is not True  # killed mid-grade: never looks finished


def test_after_sigkill_the_grading_leaves_nothing_in_the_temporary_folder(killed):
    _, tmpdir, left = killed
    ours = [name for name in left if name not in isolation_folders(left)]
    assert ours == [], f"left in TMPDIR={tmpdir} by the grading: {ours} (all that is left: {left})"


def test_after_sigkill_the_isolation_workers_folders_are_gone_too(killed):
    """The warm process keeps no folder; a worker's is bubblewrap's tmpfs, or one its supervisor removes when the
    grader that started it is gone."""
    _, tmpdir, left = killed
    assert isolation_folders(left) == [], f"left in TMPDIR={tmpdir} by the isolation: {isolation_folders(left)}"


# -- one submission --------------------------------------------------------------------------------------
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_single_grade_stopped_by_a_signal_writes_an_incomplete_report_with_0_points_and_leaves_no_folder(
        tmp_path, stop):
    folder = submission(tmp_path, "bo", str(HOSTILE / "infinite_loop.py"))
    tmpdir, path = tmp_path / "tmp", tmp_path / "bo.json"
    tmpdir.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "conformance", "grade", str(folder), "--json", str(path),
                                "-k", PE_ONLY, "--seed", "7"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env={**os.environ, "TMPDIR": str(tmpdir)}, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not any(name.startswith("conformance-hypothesis-") for name in os.listdir(tmpdir)):  # checks began
            assert time.monotonic() < deadline and process.poll() is None, "the grade's checks never began"
            time.sleep(0.1)
        time.sleep(3)  # in bo's hanging call
        process.send_signal(stop)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 128 + stop, output
    graded = json.loads(path.read_text())
    assert graded["complete"] is False and graded["grade"]["score"] == 0, graded.get("grade")
    assert f"interrupted by {signal.Signals(stop).name}" in graded["incomplete"]
    assert "score: 0 (incomplete" in output, output
    time.sleep(1)
    left = os.listdir(tmpdir)
    assert [name for name in left if name not in isolation_folders(left)] == [], left
