"""``grade DIR --scheduler`` and ``mutants --scheduler``: the same grading on a Dask cluster, with real processes.

The default run checks what needs no Dask: nothing imports it without ``--scheduler``, the address is checked,
a missing extra is named. The rest (marked slow; ``.ci/run`` runs them with the ``[cluster]`` extra) starts a
``dask scheduler`` and two ``dask worker`` processes as a user would, grades a small class on them and compares
with the local pool's reports, kills a worker mid-run, and kills every worker that grades one submission.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import adapter_path
from test_grading import HOSTILE, ROOT, assert_commands_parse, grade_class, submission

from conformance.cli import build_parser

DASK = Path(sys.executable).parent / "dask"
BUGGY = '''"""A wrong positional encoding (sin and cos swapped), honest otherwise."""
import _honest

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return _honest.wrong_positional_encoding(n, d_model)


adapter = Adapter()
'''
# What a run measures of itself (clocks, CPU, memory), not what it found: two runs with one seed differ there alone.
OF_THE_RUN = ("created", "duration_s", "execution_time", "worker_cpu_s", "worker_max_rss_mib")


def make_class(root: Path, copies: int = 1) -> Path:
    """A faithful, a buggy and a hostile submission (it tries to kill the grader), and ``copies`` - 1 more
    faithful ones."""
    klass = root / "class"
    for i in range(copies):
        submission(klass, f"ada{i}" if i else "ada", adapter_path("only_pe"))
    buggy = submission(klass, "bo", adapter_path("only_pe"))
    (buggy / "adapter.py").write_text(BUGGY)
    submission(klass, "cy", str(HOSTILE / "kills_grader.py"))
    return klass


def without_timings(value):
    """A report without what the run measured of itself: what two runs with one seed must give alike."""
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if key not in OF_THE_RUN}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def differences(got, expected, where: str = "") -> list[str]:
    """Where two reports differ, as readable paths with both values."""
    if isinstance(got, dict) and isinstance(expected, dict):
        return [line for key in sorted(set(got) | set(expected), key=str)
                for line in differences(got.get(key), expected.get(key), f"{where}.{key}")]
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        pairs = enumerate(zip(got, expected, strict=True))
        return [line for i, (a, b) in pairs for line in differences(a, b, f"{where}[{i}]")]
    return [] if got == expected else [f"{where}: {got!r} (cluster) != {expected!r} (local pool)"]


def reports(out: Path) -> dict[str, dict]:
    return {path.stem: without_timings(json.loads(path.read_text())) for path in sorted(out.glob("*.json"))}


# -- without Dask ------------------------------------------------------------------------------------------------
NO_DASK_PROBE = """
import contextlib, io, json, sys
from conformance.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    codes = [main(["grade", sys.argv[1], "--out", sys.argv[2], "--jobs", "1", "-k", "pe_position_0"]),
             main(["certify", "reference", "-k", "pe_position_0", "--no-isolate", "--progress", "off"])]
dask = sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed"))
print(json.dumps({"codes": codes, "dask": dask}))
"""


def test_a_class_graded_and_a_certify_without_scheduler_import_no_dask(tmp_path):
    klass = tmp_path / "class"
    submission(klass, "ada", adapter_path("only_pe"))
    done = subprocess.run([sys.executable, "-c", NO_DASK_PROBE, str(klass), str(tmp_path / "grades")],
                          capture_output=True, text=True, check=True)
    probe = json.loads(done.stdout.splitlines()[-1])
    assert probe == {"codes": [0, 0], "dask": []}


@pytest.mark.parametrize("address, expected", [
    ("local:0", "expected local:N with N a number of worker processes >= 1, got 'local:0'"),
    ("local:two", "expected local:N"),
    ("cluster", "expected a Dask scheduler's address (tcp://HOST:PORT"),
])
def test_a_scheduler_address_that_names_none_is_refused_with_the_forms_expected(address, expected, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["grade", "class", "--scheduler", address])
    assert expected in capsys.readouterr().err
    assert build_parser().parse_args(["mutants", "--scheduler", "tcp://10.0.0.1:8786"]).scheduler == "tcp://10.0.0.1:8786"


def test_the_documented_cluster_commands_parse():
    assert_commands_parse((ROOT / "docs" / "cluster.md").read_text())


MISSING_EXTRA_PROBE = """
import sys
sys.modules["distributed"] = None  # as where the extra is not installed: `import distributed` raises ImportError
from conformance.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_the_extra_scheduler_names_the_extra_to_install(tmp_path):
    klass = tmp_path / "class"
    submission(klass, "ada", adapter_path("only_pe"))
    done = subprocess.run([sys.executable, "-c", MISSING_EXTRA_PROBE, "grade", str(klass), "--scheduler", "local:1"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "--scheduler needs Dask's distributed (the transformer-conformance[cluster] extra)" in done.stderr
    assert "pip install 'transformer-conformance[cluster]'" in done.stderr


def test_scheduler_with_one_submission_is_a_usage_error_naming_the_fix(tmp_path, capsys):
    from conformance.cli import main

    folder = submission(tmp_path, "ada", adapter_path("only_pe"))
    assert main(["grade", str(folder), "--scheduler", "local:1"]) == 2
    assert "--scheduler grades a class" in capsys.readouterr().err


# -- real processes: a dask scheduler and two dask workers on this machine -------------------------------------
def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def is_grader(pid: int) -> bool:
    """A grader on a Dask worker: forked by the worker's grading server, with that server's command line."""
    return "serve_graders" in command_line(pid) and "serve_graders" in command_line(parent_of(pid))


def writes_to(pid: int, name: str) -> bool:
    """Whether the process holds a file named ``name`` open (a grader's output: pytest moves it off fd 1 while it
    captures, and keeps it open)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}").endswith("/" + name):
                return True
    return False


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout:g} s for {what}")


class DaskProcesses:
    """``dask scheduler`` and ``dask worker`` processes started as a user would; all killed at the end."""

    def __init__(self, folder: Path):
        self.folder, self.processes, self.workers = folder, [], []
        scheduler_file = folder / "scheduler.json"
        self.start("scheduler", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file))
        self.address = json.loads(wait_until(lambda: scheduler_file.is_file() and scheduler_file.read_text(), 60,
                                             "the scheduler's address"))["address"]

    def start(self, *argv: str, name: str = "scheduler") -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "wb")
        self.processes.append(subprocess.Popen([str(DASK), *argv], stdout=log, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, start_new_session=True))
        log.close()
        return self.processes[-1]

    def add_worker(self) -> subprocess.Popen:
        """A worker without a nanny: its process is the one that runs the tasks (and the one a test kills)."""
        name = f"worker{len(self.workers)}"
        worker = self.start("worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard", name=name)
        wait_until(lambda: b"Registered to" in (self.folder / f"{name}.log").read_bytes(), 120, f"{name} to register")
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # its session: the graders it started go with it
            process.wait()


@pytest.fixture
def dask_processes(tmp_path):
    pytest.importorskip("distributed")
    cluster = DaskProcesses(tmp_path)
    try:
        cluster.add_worker()
        cluster.add_worker()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """One class for every run (its paths are in the reports): two faithful, a buggy and a hostile submission."""
    return make_class(tmp_path_factory.mktemp("submissions"), copies=2)


@pytest.fixture(scope="module")
def local_pool_grades(klass, tmp_path_factory):
    """The class graded by the local pool (``--jobs 2``): what every cluster run must equal."""
    pytest.importorskip("distributed")
    out = tmp_path_factory.mktemp("local") / "grades"
    code, output = grade_class(klass, out, "--jobs", "2")
    assert code == 0, output
    return reports(out), (out / "summary.csv").read_text()


@pytest.mark.slow
def test_a_class_graded_on_dask_workers_equals_the_local_pool_s(dask_processes, klass, local_pool_grades, tmp_path):
    code, output = grade_class(klass, tmp_path / "grades", "--scheduler", dask_processes.address)
    assert code == 0, output
    local_reports, local_summary = local_pool_grades
    assert differences(reports(tmp_path / "grades"), local_reports) == []
    assert (tmp_path / "grades" / "summary.csv").read_text() == local_summary
    assert sorted(line.split("] ")[1].split(":")[0] for line in output.splitlines() if line.startswith("[")) == [
        "ada", "ada1", "bo", "cy"]  # progress: each submission once, as it came back
    statuses = {name: {c["id"]: c["status"] for c in report["checks"]} for name, report in local_reports.items()}
    assert statuses["bo"]["pe_matches_published_values"] == "failed"  # the class tells its submissions apart
    assert statuses["cy"]["pe_matches_published_values"] == "passed"  # the sandbox held on the worker


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_submission_and_grades_none_twice(dask_processes, klass,
                                                                           local_pool_grades, tmp_path):
    running = grade_class(klass, tmp_path / "grades", "--scheduler", dask_processes.address,
                    wait=False)
    try:
        victim = dask_processes.workers[0]
        grader = wait_until(lambda: next((pid for pid in children_of_tree(victim.pid) if is_grader(pid)), None), 120,
                            "a grader on the first worker")
        os.kill(victim.pid, signal.SIGKILL)  # mid-task: its grader is running
        victim.wait()
        # at once (grading takes seconds more): a grader left running would race its rerun for the CPU
        wait_until(lambda: not alive(grader), 2, "the killed worker's grader to die with it")
        output, _ = running.communicate(timeout=600)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 0, output
    local_reports, local_summary = local_pool_grades
    # the interrupted one regraded, every report complete
    assert differences(reports(tmp_path / "grades"), local_reports) == []
    assert (tmp_path / "grades" / "summary.csv").read_text() == local_summary
    progress = [line.split("] ")[1].split(":")[0] for line in output.splitlines() if line.startswith("[")]
    assert sorted(progress) == ["ada", "ada1", "bo", "cy"]  # each once


@pytest.mark.slow
def test_a_submission_whose_workers_all_die_is_graded_as_an_error_and_the_rest_as_usual(klass, local_pool_grades,
                                                                                        tmp_path):
    """A submission that kills every worker grading it (here the test kills them: the sandbox keeps a submission
    from reaching its worker) comes back as an error; Dask gives up on it after allowed-failures deaths."""
    # Dask gives up at the first death; and a worker holds only the task it runs (by default it may hold a second,
    # queued, which a death with no retry allowed would fail too: a classmate's error, by chance)
    dask_config = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
                   "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0"}
    running = grade_class(klass, tmp_path / "grades", "--scheduler", "local:2", env=dask_config, wait=False)
    try:
        grader = wait_until(lambda: next((pid for pid in children_of_tree(running.pid)
                                          if is_grader(pid) and writes_to(pid, "bo.txt")), None), 180,
                            "bo's grader")
        worker = parent_of(parent_of(grader))  # the grader's grading server's Dask worker
        os.kill(worker, signal.SIGKILL)
        output, _ = running.communicate(timeout=600)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 3, output  # not every submission has a report
    rows = {row.split(",")[0]: row for row in (tmp_path / "grades" / "summary.csv").read_text().splitlines()[1:]}
    assert sorted(rows) == ["ada", "ada1", "bo", "cy"]
    assert "every worker that ran it died" in (tmp_path / "grades" / "bo.txt").read_text()
    bo = json.loads((tmp_path / "grades" / "bo.json").read_text())  # a report that says so, scoring 0
    assert bo["complete"] is False and bo["grade"]["score"] == 0 and "every worker that ran it died" in bo["incomplete"]
    local_reports, _ = local_pool_grades
    others = {name: report for name, report in local_reports.items() if name != "bo"}
    graded = {name: report for name, report in reports(tmp_path / "grades").items() if name != "bo"}
    assert differences(graded, others) == []  # the rest as the local pool grades them


def children_of_tree(pid: int) -> list[int]:
    """Every descendant of ``pid``."""
    found, frontier = [], [pid]
    while frontier:
        below = [child for parent in frontier for child in children(parent)]
        found += below
        frontier = below
    return found


@pytest.mark.slow
def test_the_kill_matrix_on_dask_gives_the_local_sessions_results(tmp_path, monkeypatch, capsys):
    """Two mutants (one caught, one with training-only catches), one task each, against the local session."""
    pytest.importorskip("distributed")
    import argparse
    import warnings

    from conformance.run import killmatrix

    names = ["pe_sine_cosine_swapped", "train_no_warmup"]
    everything = killmatrix.catalogue
    monkeypatch.setattr(killmatrix, "catalogue", lambda: [row for row in everything() if row.name in names])
    results = {}
    for scheduler in (None, "local:2"):
        args = argparse.Namespace(scheduler=scheduler, training=False, workers=1, json=str(tmp_path / "m.json"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Dask's own (a port, a deprecation) are not the suite's
            killmatrix.run(args)
        progress = capsys.readouterr().err
        assert ("[2/2] mutant:" in progress) == bool(scheduler)  # one task a mutant, on the cluster when asked
        matrix = json.loads((tmp_path / "m.json").read_text())
        results[scheduler] = ({row["name"]: (row["caught"], row["ran"]) for row in matrix["mutants"]},
                              sorted((r["impl"], r["id"], r["status"]) for r in matrix["results"]))
    assert results["local:2"] == results[None]
    assert all(caught for caught, _ in results[None][0].values())  # both caught: not a comparison of empty runs

