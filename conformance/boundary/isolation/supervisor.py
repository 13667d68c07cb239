"""The worker process's life: started, limited, watched and killed.

Two processes run this module. In the grader, ``Worker`` starts one: ``python -I -B -u -`` in a new session, a
temporary working directory and the minimal environment (``environment.py``), with ``trampoline.py`` on its
standard input and the boot message (``boot_message``: the import path, the total time limit, the sources of
``WORKER_MODULES``) on its request pipe; it tells the supervisor to stop (it closes CTL), reads the supervisor's
report of how the worker ended (STATUS), kills the process group, reads the worker's CPU and memory from /proc
(the worker could lie about its own) and the end of its output; ``stop_all_workers`` ends every one at exit.

In the worker's tree, ``main`` forks once: the parent stays small and becomes the **supervisor**, the child
becomes the worker (``worker.serve``): process 1 of a PID namespace of its own where the kernel allows one
(``sandbox.enter_pid_namespace``; otherwise the supervisor is a child subreaper, and whatever the candidate
starts and abandons is re-parented to it). The supervisor waits for the worker to exit, for the grader to close
CTL (stop, or the grader died), or for the total wall-clock limit; then it kills every process left below it,
writes the worker's exit status and usage as one JSON line on STATUS, and exits.

The worker's tree loads this module from its source (trampoline.py), so it imports only the standard library
and its siblings, relatively. The limits the worker sets itself (memory, CPU, files, processes) are
``sandbox.set_limits``; the grader's per-call and total limits are ``proxy.Limits``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Relative: these modules are ``app.*`` in the worker's tree (trampoline.py), ``conformance.boundary.isolation.*``
# in the grader.
from . import environment, wire

PR_SET_CHILD_SUBREAPER = 36


# -- the grader's side: starting and stopping a worker ---------------------------------------------
class Worker:
    """One worker process (with its supervisor), its pipes and its temporary directory."""

    def __init__(self, start: dict, *, total_s: float, pass_env: tuple[str, ...], threads: int, warm=None):
        self.temp_dir = Path(tempfile.mkdtemp())  # a name like any program's: tmpXXXXXXXX/work
        work = self.temp_dir / "work"
        work.mkdir()
        self.log_path = self.temp_dir / "output.log"
        request_r, request_w = os.pipe()
        response_r, response_w = os.pipe()
        control_r, self.control_w = os.pipe()
        self.status_r, status_w = os.pipe()
        theirs = (request_r, response_w, control_r, status_w)
        env = environment.worker_environment(work, self.temp_dir, threads, pass_env)
        self.process: subprocess.Popen | None = None
        with open(self.log_path, "wb") as log:
            # warm (warm.py): forked from a pre-imported process; else (or when it cannot fork) a new interpreter
            self.forked = warm.fork(threads=threads, pass_env=pass_env, pipes=theirs, log_fd=log.fileno(),
                                    cwd=str(work), env=env) if warm is not None else None
            if self.forked is None:
                # "-": the program comes on standard input (trampoline.py): nothing in the command line names the suite
                self.process = subprocess.Popen(
                    [sys.executable, "-I", "-B", "-u", "-"],
                    stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=work, env=env,
                    pass_fds=theirs, start_new_session=True,
                )
        self.warm = self.process is None
        for fd in theirs:
            os.close(fd)
        self.channel = wire.Channel(response_r, request_w)
        if self.process is not None:
            with contextlib.suppress(BrokenPipeError):  # a worker that died at once: its exit is the error
                self.process.stdin.write(trampoline_program(*theirs))
                self.process.stdin.close()
        self.channel.write_bytes(boot_message(start["path"], total_s), deadline=time.monotonic() + 30)
        self.channel.send({**start, "temp_dir": str(self.temp_dir)})
        self.exit_report: dict | None = None
        _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        """The supervisor's process id (a warm worker's, once its warm process has forked it; None if it never did)."""
        return self.process.pid if self.process is not None else self.forked.pid()

    def receive(self, deadline: float, make_model=None) -> Any:
        return self.channel.receive(deadline=deadline, make_model=make_model)

    def begin_stop(self) -> None:
        """Tell the supervisor to end the worker (it closes CTL's write end); ``stop`` waits for it."""
        control_w, self.control_w = self.control_w, -1  # once: the number may be another file's afterwards
        if control_w >= 0:
            with contextlib.suppress(OSError):
                os.close(control_w)

    def stop(self) -> dict:
        """End the worker and everything it started; the supervisor's report of how the worker ended."""
        if self.exit_report is None:
            self.begin_stop()
            self.exit_report = self._read_status(time.monotonic() + 5.0)
            if self.pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            if self.process is not None:  # a warm worker is its warm process's child: that one reaps it
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=5)
            self.channel.close()
            with contextlib.suppress(OSError):
                os.close(self.status_r)
            _LIVE.discard(self)
        return self.exit_report

    def _read_status(self, deadline: float) -> dict:
        data = b""
        poller = select.poll()
        poller.register(self.status_r, select.POLLIN | select.POLLHUP)
        while time.monotonic() < deadline and not data.endswith(b"\n"):
            if not poller.poll(max(1, int((deadline - time.monotonic()) * 1000))):
                continue
            try:
                chunk = os.read(self.status_r, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        try:
            return json.loads(data.decode() or "{}")
        except ValueError:
            return {}

    def output(self, *, head: int = 4096, tail: int = 1500) -> dict:
        try:
            size = self.log_path.stat().st_size
            with open(self.log_path, "rb") as log:
                first = log.read(head)
                log.seek(max(0, size - tail))
                last = log.read(tail)
        except OSError:
            return {"bytes": 0, "head": "", "tail": ""}
        return {"bytes": size, "head": first.decode(errors="replace"), "tail": last.decode(errors="replace")}

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def usage(self) -> dict:
        """{cpu_s, max_rss_mib} of the worker so far: the supervisor's report once it has ended, else read from
        /proc while it runs (the report is written before the last worker stops). The grader reads /proc itself:
        the worker could lie about its own usage."""
        if self.exit_report is not None:
            return {key: self.exit_report.get(key) for key in ("cpu_s", "max_rss_mib")}
        return _live_usage(self.pid) if self.pid is not None else {"cpu_s": None, "max_rss_mib": None}


def _live_usage(supervisor: int) -> dict:
    """CPU seconds (its own and its reaped children's) and peak RSS of the supervisor's children: the worker."""
    tick, cpu_s, max_rss_mib = os.sysconf("SC_CLK_TCK"), 0.0, 0.0
    for pid in children_of(supervisor):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:  # it ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3, utime field 14
        cpu_s += sum(int(value) for value in fields[11:15]) / tick  # utime, stime, cutime, cstime
        peak = [line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")]
        max_rss_mib = max(max_rss_mib, int(peak[0]) / 1024 if peak else 0.0)
    return {"cpu_s": round(cpu_s, 3), "max_rss_mib": round(max_rss_mib, 1)}


def children_of(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return [int(child) for child in children.read().split()]
    except (OSError, ValueError):  # a kernel without CONFIG_PROC_CHILDREN: the processes whose parent it is
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and parent_of(int(entry)) == pid]


def parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
        return int(text[text.rindex(")") + 2:].split()[1])  # after "pid (comm) state": the parent's pid
    except (OSError, ValueError, IndexError):
        return None


# What the worker's tree runs (trampoline.py loads them): this module, the worker and what they import.
WORKER_MODULES = ("supervisor", "worker", "wire", "sandbox", "environment", "importing", "frameworks")
_SOURCES: dict[str, str] = {}


def trampoline_program(*fds: int) -> bytes:
    """The worker's program, for its standard input: trampoline.py and the call naming its pipes."""
    return (Path(__file__).with_name("trampoline.py").read_text() + f"\nstart{fds}\n").encode()


def boot_message(path: list[str], total_s: float) -> bytes:
    """What the trampoline reads first: its import path, the total time limit, the worker's modules' sources."""
    if not _SOURCES:
        _SOURCES.update({name: Path(__file__).with_name(f"{name}.py").read_text() for name in WORKER_MODULES})
    body = json.dumps({"path": path, "total_s": total_s, "modules": _SOURCES}).encode()
    return len(body).to_bytes(8, "little") + body


_LIVE: set[Worker] = set()


@atexit.register
def stop_all_workers() -> None:
    """Every worker still running ends with the grader (the CLI also calls this before it exits). In the worker's
    tree there is none: nothing to do."""
    for worker in list(_LIVE):
        worker.cleanup()


# -- the worker's tree: the supervisor -------------------------------------------------------------
def main(serve, request_fd: int, response_fd: int, control_fd: int, status_fd: int, total_s: float,
         namespace: str = "") -> int:
    """The worker's tree: this process forks; the child serves (``serve``: ``worker.serve``), this one
    supervises it. ``namespace``: what ``sandbox.enter_pid_namespace`` made of this process before (the
    trampoline calls it while the process has one thread): "user+pid", "pid", or "" (none; the supervisor is
    then a subreaper)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    child = os.fork()
    if child == 0:
        os.close(control_fd)
        os.close(status_fd)
        try:
            serve(request_fd, response_fd, namespace)
        finally:
            os._exit(0)
    os.close(request_fd)
    os.close(response_fd)
    return supervise(child, control_fd, status_fd, total_s)


def supervise(child: int, control_fd: int, status_fd: int, total_s: float) -> int:
    """Wait for the worker to exit, for CTL to close or for the total limit; kill what is left; report on STATUS."""
    deadline, status, reason, usage = time.monotonic() + total_s, None, None, None
    poller = select.poll()
    poller.register(control_fd, select.POLLIN | select.POLLHUP)
    exited = _pidfd(child)  # readable when the worker exits (Linux 5.3+); else wait4 every 50 ms
    if exited is not None:
        poller.register(exited, select.POLLIN)
    while status is None:
        pid, raw, usage = os.wait4(child, os.WNOHANG)
        if pid == child:
            status = raw
            break
        left_ms = max(0, int((deadline - time.monotonic()) * 1000)) + 1
        events = poller.poll(50 if exited is None else min(left_ms, 60_000))
        if any(fd == control_fd for fd, _ in events):  # the grader closed CTL: stop now
            reason = "stopped by the grader"
        elif time.monotonic() > deadline:
            reason = f"total time limit of {total_s:g} s"
        else:
            continue
        os.kill(child, signal.SIGKILL)
        _, status, usage = os.wait4(child, 0)
    if exited is not None:
        os.close(exited)
    killed = kill_descendants()
    report = {"exit": os.WEXITSTATUS(status)} if os.WIFEXITED(status) else {"signal": os.WTERMSIG(status)}
    report.update(killed_descendants=killed, reason=reason,
                  cpu_s=round(usage.ru_utime + usage.ru_stime, 3), max_rss_mib=round(usage.ru_maxrss / 1024, 1))
    try:
        os.write(status_fd, (json.dumps(report) + "\n").encode())
    except OSError:
        pass
    return 0


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def kill_descendants(rounds: int = 20) -> int:
    """SIGKILL every process below this one (orphans come back to us, the subreaper); reap them."""
    killed = 0
    for _ in range(rounds):
        below = descendants(os.getpid())
        if not below:
            break
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        _reap(deadline=time.monotonic() + 1.0)
    return killed


def _reap(deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found
