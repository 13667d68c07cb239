"""Long runs spread over a Dask cluster: ``--scheduler ADDRESS`` of ``grade DIR`` and ``mutants``.

ADDRESS is a running scheduler's (``tcp://host:8786``: ``dask scheduler``, dask-jobqueue's ``SLURMCluster``,
dask-kubernetes' ``KubeCluster``), or ``local:N``: a Dask ``LocalCluster`` of N worker processes on this machine.
Each task runs ``python -m conformance ...`` in a process of its own on a worker, exactly as the local pool runs
it (the sandbox and limits of ``--isolate`` apply there), and hands back the JSON report's text and the terminal
output: the caller writes the files, once per task. Dask reruns a task whose worker died (its process dies with
the worker: it writes nothing), so each result arrives once; a task whose workers kept dying (distributed's
``allowed-failures``, 3 by default) comes back as the error that says so.

The workers read the paths they are given (a submission folder) where the client names them: on a cluster,
a shared file system mounted at the same path. Dask is the optional extra ``[cluster]``, imported here only,
inside the functions that use it: without ``--scheduler`` nothing imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EXTRA = "transformer-conformance[cluster]"
LOCAL = "local:"


class ClusterError(RuntimeError):
    """The cluster cannot be used: Dask missing, or an address that names no scheduler."""


def scheduler_address(text: str) -> str:
    """``--scheduler``'s value, checked: ``local:N`` (N >= 1) or a scheduler's address (``tcp://host:port``)."""
    if text.startswith(LOCAL):
        count = text[len(LOCAL):]
        if not count.isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(
                f"expected local:N with N a number of worker processes >= 1, got {text!r}")
        return text
    if "://" not in text and ":" not in text:
        raise argparse.ArgumentTypeError(
            f"expected a Dask scheduler's address (tcp://HOST:PORT, as `dask scheduler` prints it) or local:N,"
            f" got {text!r}")
    return text


def import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(f"--scheduler needs Dask's distributed (the {EXTRA} extra), which is not installed here"
                           f" (got: {exc}). Fix: pip install '{EXTRA}'") from None
    return distributed


@contextlib.contextmanager
def client_for(address: str):
    """A Dask client of ``address``; for ``local:N``, of a local cluster started here and closed after."""
    distributed = import_distributed()
    if address.startswith(LOCAL):
        # One thread a worker: a task is a whole grading process, and N tasks at a time is what N asked for.
        with distributed.LocalCluster(n_workers=int(address[len(LOCAL):]), threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(int(address[len(LOCAL):]))  # the tasks in flight follow the threads there
            yield client
        return
    try:
        client = distributed.Client(address, timeout="30s")
    except OSError as exc:
        raise ClusterError(f"no Dask scheduler answered at {address} within 30 s (got: {exc}). Likely cause: the"
                           " scheduler is not running or listens elsewhere; `dask scheduler` prints its address"
                           ) from None
    with client:
        yield client


def as_they_finish(address: str, function, arguments: dict[str, tuple]) -> Iterator[tuple[str, Any]]:
    """``function(*arguments[name])`` for every name, one task each on the cluster at ``address``; yields
    ``(name, result)`` as each finishes, with the exception in place of a result for a task that failed
    (``distributed.KilledWorker``: its workers kept dying while running it)."""
    distributed = import_distributed()
    run = uuid.uuid4().hex[:8]  # keys unique to this run: a shared scheduler may hold another run's
    with client_for(address) as client:
        pending, futures = list(arguments.items()), {}

        def submit_while_a_thread_is_free(finished) -> None:
            # One task per worker thread at most: a task waiting on a worker dies with it when the worker dies,
            # counted as a death of its own (a classmate's error, by chance); waiting here it goes where a thread
            # frees up.
            while pending and len(futures) - finished < max(1, sum(client.nthreads().values())):
                name, args = pending.pop(0)
                future = client.submit(function, *args, key=f"{name}-{run}", pure=False)
                futures[future] = name
                done.add(future)

        done = distributed.as_completed()
        submit_while_a_thread_is_free(0)
        for finished, future in enumerate(done, start=1):
            try:
                yield futures[future], future.result()
            except Exception as exc:  # the task's own failure, or its workers' deaths: the caller's to report
                yield futures[future], exc
            future.release()
            submit_while_a_thread_is_free(finished)


def task_failure(exc: BaseException) -> str:
    """What a failed task's exception says, with the likely cause when its workers died."""
    if type(exc).__name__ == "KilledWorker":
        return (f"every worker that ran it died ({exc}). Likely cause: it kills the process that runs it, or"
                " needs more memory than a worker has")
    return f"{type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------------------------------
# On a worker: one command of the suite in its own process
# --------------------------------------------------------------------------------------------------


def run_conformance(argv: list[str], timeout: float, cwd: str, needs: list[str] = ()) -> dict:
    """On a worker: ``python -m conformance ARGV --json REPORT`` in a process of its own, started in ``cwd`` (the
    client's: relative paths name the same files, and the reports say them as the local pool's do). Returns
    ``{"report": the JSON report's text or None, "output": stdout and stderr, "report_path": REPORT, "host": this
    machine}``. The process is killed with the worker (it must not outlive a task Dask will run again elsewhere)."""
    require_paths([cwd, *needs])
    with tempfile.TemporaryDirectory(prefix="conformance-task-") as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "conformance", *argv, "--json", str(report)]
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout, preexec_fn=dies_with(os.getpid()), cwd=cwd)
            output = done.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as exc:
            output = (exc.stdout or b"").decode(errors="replace") + f"\nkilled after {timeout:g} s\n"
        text = report.read_text() if report.is_file() else None
    return {"report": text, "output": output, "report_path": str(report), "host": socket.gethostname()}


def require_paths(paths: list[str]) -> None:
    """On a worker: every path the task names must exist here, as on the client (a shared file system)."""
    missing = [path for path in paths if not Path(path).exists()]
    if missing:
        raise ClusterError(f"worker on {socket.gethostname()}: expected {', '.join(missing)} to exist here, as on"
                           " the client; it does not. Likely cause: the workers do not share the client's file"
                           " system, or mount it elsewhere (mount it at the same path)")


def dies_with(parent: int):
    """A ``preexec_fn``: the child gets SIGKILL when its parent (the worker) dies (Linux ``PR_SET_PDEATHSIG``).
    The thread that forks it waits for it, so the signal cannot come from that thread ending first."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before the fork: the child only calls it

    def set_parent_death_signal():
        prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the worker died before the call: nothing would signal us
            os._exit(1)

    return set_parent_death_signal
