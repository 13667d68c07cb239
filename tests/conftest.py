"""Helpers for the suite's own tests: run `transformer-conformance certify` in-process and read its report."""

import atexit
import contextlib
import copy
import fcntl
import gc
import hashlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.cli import main

# One BLAS and OpenMP thread per process, as certify's --threads 1 gives torch
# (conformance.run.plugin.limit_torch_threads): the checks' arrays are tiny, and with two xdist workers on two cores
# every extra thread spins on a core the other worker needs (the NumPy implementation's matrix products cost a third
# more with OpenBLAS's default). Set here, before pytest-xdist starts its workers, which read it when they load NumPy;
# isolated submissions inherit it.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# The catalogue's answers kept on disk (conformance.diagnosis.answer_cache) go to a folder of this test session,
# never the user's cache: a test's verdict must not depend on what an earlier run left there. Made here, in the
# controller, before pytest-xdist starts its workers, which inherit it and share it (each entry is written
# atomically, and a shared folder spares every worker the answers another one computed); removed at the end.
if "PYTEST_XDIST_WORKER" not in os.environ:
    os.environ["CONFORMANCE_CACHE_DIR"] = tempfile.mkdtemp(prefix="conformance-answers-")
    atexit.register(shutil.rmtree, os.environ["CONFORMANCE_CACHE_DIR"], ignore_errors=True)
os.environ.pop("CONFORMANCE_CACHE", None)  # on, as for a user, unless a test turns it off

pytest_plugins = ["pytester"]
# Hostile submissions are data, not tests: one has a conftest.py that would rewrite every report.
collect_ignore = ["hostile"]
# The held-out attacks on the grader (tests/hostile_grading/: written against it before its walls were rebuilt, a few
# minutes of grading): only when asked, as .ci/run asks. The submissions beside them are data (none is test_*.py).
if not os.environ.get("RUN_HELDOUT_GRADING"):
    collect_ignore.append("hostile_grading")
# The held-out cases of the dropout-placement checks (tests/heldout_dropout/: about 40 s each, 33 cases).
if not os.environ.get("RUN_HELDOUT_DROPOUT"):
    collect_ignore.append("heldout_dropout")
ADAPTERS = Path(__file__).parent / "adapters"


# Forks of a test process. An earlier test in the same process may have started JAX's threads (with the [jax] extra
# installed), and a fork after that can deadlock (JAX warns, and the warning is an error here): whatever forks, the
# class of `grade`, `watch`, runs as a user runs it, in a process of its own.
_FORKS: list[int] = []
os.register_at_fork(before=lambda: _FORKS.append(os.getpid()))


@pytest.fixture(autouse=True)
def no_fork_of_the_test_process():
    before = len(_FORKS)
    yield
    if len(_FORKS) > before:
        pytest.fail("the test forked the test process: run what forks (grade CLASS, watch) in a process of its own,"
                    " as a user does (an earlier test here may have started JAX's threads)", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def imports_out_of_the_garbage_collectors_walks():
    """The objects of the modules every worker imports (torch, hypothesis, the suite), frozen out of the collector's
    walks (``gc.freeze``): they live as long as the process, and every certify ends two pytest sessions with
    ``gc.collect()``, which would walk them all again."""
    with contextlib.suppress(ImportError):
        import torch  # noqa: F401 - imported for its objects, as every certify of a torch implementation does
    import hypothesis  # noqa: F401

    import conformance.diagnosis.matching  # noqa: F401
    import conformance.run.plugin  # noqa: F401

    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


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


# One certify run per test session for the same arguments, whichever xdist worker asks first: the report lies in the
# workers' common temporary folder, behind a lock (pytest-xdist's recipe for session fixtures).
_SHARED_RUNS: dict[tuple[str, ...], dict] = {}


def shared_once(tmp_path_factory, key: tuple, produce) -> dict:
    """``produce()`` (plain data) computed once per test session for ``key``, whichever xdist worker asks first: the
    result lies in the workers' common temporary folder, behind a lock (pytest-xdist's recipe for session fixtures)."""
    if key not in _SHARED_RUNS:
        root = tmp_path_factory.getbasetemp()
        root = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root
        name = "shared-" + hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            done = root / f"{name}.json"
            if not done.exists():
                folder = root / name
                folder.mkdir(exist_ok=True)
                partial = done.with_suffix(".partial")
                partial.write_text(json.dumps(produce(folder)))
                partial.replace(done)
            _SHARED_RUNS[key] = json.loads(done.read_text())
    return copy.deepcopy(_SHARED_RUNS[key])


def shared_run(tmp_path_factory, impl: str, *args: str) -> Run:
    """certify IMPL ARGS (output discarded, ``--progress off``) run once per session; every caller gets its own
    copy of the result. For runs whose report several tests read, in whichever worker they land."""
    key = (impl, *args, "--progress", "off")

    def certify(folder: Path) -> dict:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["certify", key[0], "--json", str(folder / "report.json"), *key[1:]])
        report = json.loads((folder / "report.json").read_text()) if (folder / "report.json").exists() else None
        return {"code": code, "out": out.getvalue(), "err": err.getvalue(), "report": report}

    run = shared_once(tmp_path_factory, key, certify)
    return Run(run["code"], run["out"], run["err"], run["report"])


# The reference trained once per session (the slow step's, left out of the default selection), with the
# checks whose pictures tests/test_browser.py opens in a browser: tests/test_training.py asserts the training
# checks on it, tests/test_browser.py renders it.
TRAINING_CHECKS = ("rate_used_at_each_step_is_lrate", "reported_loss_is_label_smoothed_cross_entropy",
                   "adam_steps_match_reference", "evaluation_mode_has_no_dropout",
                   "dropout_acts_on_every_sublayer_output_and_embedding_sum", "dropout_acts_nowhere_else",
                   "reversal_task_is_learned",
                   "smoothed_loss_approaches_its_floor_from_above", "greedy_decoding_reverses_cabed",
                   "last_layer_cross_attention_reads_mirrored_positions",
                   "top_probabilities_stay_near_the_smoothed_target")
TRAINED_REFERENCE_RUN = ("-k", " or ".join(("pe_has_one_row", "attention", "lrate_matches_published_paper",
                                            "trained_checkpoint", *TRAINING_CHECKS)))


# A failing run that draws every picture but the training curves: the PE table, the checkpoint's attention,
# the schedule, and difference heatmaps (the mutant fails the attention and checkpoint comparisons).
PICTURED_RUN = ("--no-training", "-k",
                "pe_has_one_row or attention or lrate_matches_published_paper or trained_checkpoint")

# nan_attention fails the fully-masked-row checks and passes layer norm: a small run with failures.
FAILING_RUN = ("--no-training", "-k", "fully_masked or layer_norm")
