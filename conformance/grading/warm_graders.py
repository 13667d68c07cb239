"""Graders forked from a pre-imported process: a class's on this machine, and a Dask worker's.

A grader (``submission.grade_submission``) imports the suite, torch, pytest and hypothesis before its first check.
``fork_grader`` forks one from a process that imported them already (``import_graders``), its output to a file, its
report to a path, its worker forked from the process's warm workers (``boundary/isolation/warm.py``). The local pool
(``classroom.grade_in_forks``) forks them from the class's own process; on a Dask cluster each worker thread keeps a
**grading server** (``serve_graders``: a process of its own, single-threaded, which dies with the thread's worker)
that forks one grader per task and answers with the report's text and the output (``grade_on_worker``).

Where the kernel confines what a worker may write (Landlock), the graders of one process share the answers the
diagnosis computes of the catalogue's known bugs (``shared_answers``): a folder of the run that no submission can
write or read, removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

SLACK_S = 600  # a grader may outlive its worker's total time by this much, then it is killed


def import_graders() -> None:
    """What every grader imports, imported once: its forks start with it."""
    from conformance.run.warmup import import_ahead

    import_ahead("conformance.grading.submission", "conformance.grading.points", "conformance.grading.gradescope")


def fork_grader(folder: Path, report_path: Path, log_path: Path, seed: int, args, warm, answers: str | None, *,
                die_with_parent: bool = False) -> int:
    """A grader for ``folder``, forked: its output to ``log_path``, its report to ``report_path``; its pid.
    ``die_with_parent``: it gets SIGKILL when this process dies (a grading server's, on a Dask worker)."""
    from conformance.diagnosis.answer_cache import CACHE_DIR_ENV
    from conformance.grading.interrupts import let_through
    from conformance.grading.submission import grade_submission
    from conformance.reports.safe_text import never_fail_to_encode
    from conformance.run.cluster import dies_with

    set_death_signal = dies_with(os.getpid()) if die_with_parent else None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 3
    try:
        if set_death_signal is not None:
            set_death_signal()
        let_through()  # forked while the class held its signals back (classroom.grade_in_forks): a grader takes them
        with open(log_path, "w") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        never_fail_to_encode(sys.stdout, sys.stderr)  # NAME.txt: a string a rendering missed costs no report
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        if answers:  # the class's answers, which no submission can write (shared_answers)
            os.environ[CACHE_DIR_ENV] = answers
        one = argparse.Namespace(**{**vars(args), "submission": str(folder), "one": True, "seed": seed,
                                    "json": str(report_path), "shared_answers": bool(answers)})
        code = grade_submission(one, warm=warm)
    except BaseException:  # noqa: BLE001 - the grader's own failure: in its output, and its report is missing
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def kill_overdue(running: dict, limit_s: float) -> None:
    """SIGKILL every grader of ``running`` ({pid: (what, started)}) older than ``limit_s``."""
    for pid, (_, started) in running.items():
        if time.monotonic() - started > limit_s:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def shared_answers(isolate: bool):
    """A folder for the answers the graders' diagnoses compute of the catalogue's known bugs (never of a
    submission), shared by every grader forked here; None where a worker could write to it: without Landlock
    (an older kernel), or in-process (``--no-isolate``). Removed at the end."""
    from conformance.boundary.isolation.sandbox import landlock_abi
    from conformance.run import janitor

    if not isolate or landlock_abi() < 1:
        yield None
        return
    folder = janitor.remove_after_exit(tempfile.mkdtemp(prefix="answers-of-the-class-"))  # even if killed
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- on a Dask worker ----------------------------------------------------------------------------------
def grade_on_worker(folder: str, seed: int, args, cwd: str) -> dict:
    """A Dask task: ``folder`` graded by a grader forked from this worker thread's grading server, as the local
    pool grades it. Returns ``{"report": its JSON text or None, "output": the grader's output, "report_path":
    where the grader wrote the report, "host": this machine}`` (``cluster.run_conformance``'s shape)."""
    from conformance.run.cluster import require_paths

    require_paths([cwd, folder])
    return GradingServer.of_this_thread().grade({"folder": folder, "seed": seed, "args": args, "cwd": cwd})


class GradingServer:
    """The grading server of one Dask worker thread: a process of its own (``serve_graders``), fed one
    request at a time over its standard input, answering on its standard output."""

    PROGRAM = "from conformance.grading.warm_graders import serve_graders; serve_graders()"
    _servers: dict[tuple[int, int], GradingServer] = {}  # per process and thread: forked workers start afresh

    def __init__(self):
        from conformance.run.cluster import dies_with

        self.process = subprocess.Popen([sys.executable, "-c", self.PROGRAM], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        preexec_fn=dies_with(os.getpid()))

    @classmethod
    def of_this_thread(cls) -> GradingServer:
        key = (os.getpid(), threading.get_ident())
        server = cls._servers.get(key)
        if server is None or server.process.poll() is not None:
            server = cls._servers[key] = cls()
        return server

    def grade(self, request: dict) -> dict:
        try:
            pickle.dump(request, self.process.stdin)
            self.process.stdin.flush()
            return pickle.load(self.process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            self.process.kill()
            raise RuntimeError(f"the grading server on {socket.gethostname()} died ({exc})") from None


def serve_graders() -> None:
    """A grading server's program: import once, then fork a grader per request read from standard input (pickled
    ``{folder, seed, args, cwd}``), wait for it, answer on standard output; until standard input closes."""
    requests, replies = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the graders' output goes to their files; nothing else may write on the replies
        os.dup2(null, fd)
    from conformance.boundary.isolation.warm import WarmWorkers

    import_graders()
    with WarmWorkers() as warm, shared_answers(True) as answers:
        while True:
            try:
                request = pickle.load(requests)
            except EOFError:
                return
            pickle.dump(graded_here(request, warm, answers), replies)
            replies.flush()


def graded_here(request: dict, warm, answers: str | None) -> dict:
    """One request of a grading server: a grader forked, waited for (killed past its limit), its report and output."""
    args = request["args"]
    os.chdir(request["cwd"])  # relative paths name what they name on the client
    warm.start(threads=args.threads, pass_env=tuple(args.pass_env))
    with tempfile.TemporaryDirectory(prefix="conformance-task-") as tmp:
        name = Path(request["folder"]).name
        report, log = Path(tmp) / f"{name}.json", Path(tmp) / f"{name}.txt"  # named like the local pool's
        pid = fork_grader(Path(request["folder"]), report, log, request["seed"], args, warm,
                          answers if args.isolate else None, die_with_parent=True)
        running = {pid: (request["folder"], time.monotonic())}
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            kill_overdue(running, args.worker_total_timeout + SLACK_S)
            time.sleep(0.02)
        return {"report": report.read_text() if report.is_file() else None,
                "output": log.read_text(errors="replace") if log.is_file() else "",
                "report_path": str(report), "host": socket.gethostname()}
