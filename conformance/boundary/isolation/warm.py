"""Warm workers: a pre-imported process that forks each isolated worker, instead of a fresh interpreter per worker.

A cold worker (``supervisor.Worker``) is a new ``python -I -B -u -`` that imports NumPy and torch before it imports
the candidate. ``WarmWorkers`` starts one **warm process** per worker environment
(thread count, ``--pass-env``): started exactly like a worker (the same interpreter and flags, the minimal
environment, a new session, ``trampoline.py`` on its standard input; no folder of its own), it imports
NumPy and torch from the Python installation, and nothing else (no candidate, nothing of the suite), then waits.
Each worker it is asked for is a ``fork`` of it: the child takes the four pipes and the output file the grader
sent (``SCM_RIGHTS``), becomes a session of its own, changes to its own working directory and environment, draws
fresh random state, and then runs the trampoline's ``start`` as a cold worker does: the boot message, the
supervisor, the PID namespace, the limits, Landlock, the candidate. What the child inherits is what the warm
process imported; it never held anything of another worker (the start message and the candidate go over the
child's own pipe, after the fork).

Only the grader reaches the warm process: its socket is one end of a ``socketpair`` that no worker inherits (the
child closes it first), never a name on the file system or an abstract socket a candidate could connect to.
When the warm process cannot fork (it died, or the kernel refused), ``fork`` returns None and the caller starts
a cold worker. A submission that ships its own ``numpy`` or ``torch`` (``shadows_preloaded``) gets a cold worker,
which imports its copy.

Used by ``grade DIR`` (one warm process for the whole class) and by isolated ``certify`` and ``watch`` (every
worker of the run or of the session, restarts included, forks from it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from . import environment, reads, walls

PRELOADED = ("numpy", "numpy.random", "torch")  # what candidates import; imported by the warm process when installed
FORK_REPLY_S = 30.0  # the warm process answers a fork at once; past this it is stuck, and the worker starts cold


class WarmProcess:
    """One pre-imported process of a given worker environment, and the grader's end of its socket."""

    def __init__(self, threads: int, pass_env: tuple[str, ...]):
        self.socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        their_fd = theirs.fileno()
        preload = [name for name in PRELOADED if importlib.util.find_spec(name) is not None]
        path = [entry for entry in sys.path if entry and _inside(entry, reads.python_trees())]
        # no folder of its own: it only imports, and each child changes to its worker's; its output has no name,
        # so a grader killed leaves nothing of it on disk
        home = Path(tempfile.gettempdir())
        with tempfile.TemporaryFile() as log:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-B", "-u", "-"], stdin=subprocess.PIPE, stdout=log,
                stderr=subprocess.STDOUT, cwd="/", pass_fds=(their_fd,), start_new_session=True,
                env=environment.worker_environment(home, home, threads, pass_env))
        theirs.close()
        self.dead = False  # it exited, or left a request unanswered: the next workers start cold
        program = Path(__file__).with_name("trampoline.py").read_text()
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(f"{program}\nwarm({their_fd}, {preload!r}, {path!r})\n".encode())
            self.process.stdin.close()

    def fork(self, pipes: tuple[int, int, int, int], log_fd: int, cwd: str, env: dict[str, str],
             cgroup: list[str] = ()) -> Forked | None:
        """Ask for a fresh worker holding ``pipes`` (request, response, control, status), writing its output to
        ``log_fd``, in ``cwd`` with ``env``, in the control group whose ``cgroup.procs`` files ``cgroup`` names
        (the child joins it first); None if the request could not be sent (the process is gone). The
        request waits in the socket while the process still imports: the caller goes on, and learns the
        worker's process id when it needs it (``Forked.pid``)."""
        if self.dead:
            return None
        reply_r, reply_w = os.pipe()
        try:
            message = json.dumps({"cwd": cwd, "env": env, "cgroup": list(cgroup)}).encode()
            socket.send_fds(self.socket, [message], [*pipes, log_fd, reply_w])
        except OSError:
            os.close(reply_r)
            self.dead = True
            return None
        finally:
            os.close(reply_w)
        return Forked(reply_r, self)

    def close(self) -> None:
        """End the warm process (its socket closes; it exits) and remove its folder. Workers it forked go on:
        each ends with its own grader."""
        with contextlib.suppress(OSError):
            self.socket.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Forked:
    """A worker asked of a warm process: its process id once the warm process has forked it."""

    def __init__(self, reply_fd: int, process: WarmProcess):
        self._reply_fd, self._process, self._pid = reply_fd, process, None

    def pid(self) -> int | None:
        """The worker's process id (waiting for the fork, at most ``FORK_REPLY_S``); None if it was never forked
        (the warm process died): its pipes then close, and the caller hears that the worker ended."""
        if self._reply_fd >= 0:
            fd, self._reply_fd = self._reply_fd, -1
            try:
                self._pid = _read_pid(fd, FORK_REPLY_S)
            finally:
                os.close(fd)
            if self._pid is None:
                self._process.dead = True
        return self._pid


class WarmWorkers:
    """The warm processes of a run, one per worker environment, started at the first worker that needs one."""

    def __init__(self):
        self._processes: dict[tuple, WarmProcess] = {}
        self._owner = os.getpid()  # a forked grader uses its parent's processes; only the parent closes them

    def start(self, *, threads: int, pass_env: tuple[str, ...]) -> None:
        """Start the warm process of this environment now (a class's, before its graders are forked); none where
        bubblewrap runs the workers (each sandbox starts its own interpreter: nothing would fork from it)."""
        key = (threads, tuple(pass_env))
        if key not in self._processes and walls.bubblewrap() is None:
            self._processes[key] = WarmProcess(threads, tuple(pass_env))

    def fork(self, *, threads: int, pass_env: tuple[str, ...], pipes: tuple[int, int, int, int], log_fd: int,
             cwd: str, env: dict[str, str], cgroup: list[str] = ()) -> Forked | None:
        self.start(threads=threads, pass_env=pass_env)
        process = self._processes.get((threads, tuple(pass_env)))
        return process.fork(pipes, log_fd, cwd, env, cgroup) if process is not None else None

    def close(self) -> None:
        if os.getpid() != self._owner:
            return
        for process in self._processes.values():
            process.close()
        self._processes.clear()

    def __enter__(self) -> WarmWorkers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def shadows_preloaded(folder: Path | None) -> bool:
    """Whether the implementation's own folder holds a module or package named like one the warm process imports
    (a submission that ships its own ``torch``): its worker must start cold, to import that copy."""
    if folder is None:
        return False
    tops = {name.partition(".")[0] for name in PRELOADED}
    return any((folder / name).exists() or (folder / f"{name}.py").exists() for name in tops)


def _inside(entry: str, trees: list[str]) -> bool:
    real = Path(os.path.realpath(entry))
    return any(real == Path(tree) or real.is_relative_to(tree) for tree in trees)


def _read_pid(fd: int, timeout_s: float) -> int | None:
    ready, _, _ = select.select([fd], [], [], timeout_s)
    if not ready:
        return None
    try:
        text = os.read(fd, 32).decode()
        return int(text) if text.isdigit() else None
    except (OSError, ValueError):
        return None
