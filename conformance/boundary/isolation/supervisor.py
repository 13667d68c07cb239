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
from . import environment, sandbox, walls, wire

PR_SET_CHILD_SUBREAPER = 36
NAMESPACES_VARIABLE = "CONFORMANCE_NAMESPACES"  # "off": the worker enters none (how tests stand for a kernel without)
TASKS_PER_PROCESS = 8  # a control group counts threads: torch and OpenMP start a few per process
ANSWER_SLACK_MIB = 64  # an answer holds at most what the worker may hold in memory, and its header


def answer_bytes(limits: dict) -> int:
    """The largest answer the grader reads: what the worker could hold (its memory limit), at most 2 GiB. The
    buffers are mapped, not filled: an answer announced and never sent costs nothing here."""
    return min(2**31, (limits.get("memory_mib", 8192) + ANSWER_SLACK_MIB) * 2**20)


# -- the grader's side: starting and stopping a worker ---------------------------------------------
class Worker:
    """One worker process (with its supervisor), its pipes and its temporary directory."""

    def __init__(self, start: dict, *, total_s: float, pass_env: tuple[str, ...], threads: int, warm=None):
        limits = start.get("limits", {})
        self.bubblewrap = walls.bubblewrap() if start.get("bubblewrap", True) else None
        self.landlock_asked = sandbox.landlock_abi() if start.get("landlock", True) else 0
        # its output: a file with no name, opened here before it starts, read back through this descriptor only:
        # nothing the worker does to its folder (a link, a pipe in its place) changes what the grader reads
        self.log = tempfile.TemporaryFile()
        if self.bubblewrap:  # its folder is in its own tmpfs, never on this machine's disk
            self.temp_dir, self.host_dir = Path(walls.sandbox_temp_dir()), None
            warm = None  # a warm process's children share its file system: each sandbox starts cold
        else:
            self.temp_dir = self.host_dir = Path(tempfile.mkdtemp())  # a name like any program's: tmpXXXXXXXX/work
            (self.temp_dir / "work").mkdir()
        work = self.temp_dir / "work"
        self.group = walls.ControlGroup.create(memory_mib=limits.get("memory_mib", 8192),
                                               tasks=TASKS_PER_PROCESS * limits.get("processes", 64))
        request_r, request_w = os.pipe()
        response_r, response_w = os.pipe()
        control_r, self.control_w = os.pipe()
        self.status_r, status_w = os.pipe()
        theirs = (request_r, response_w, control_r, status_w)
        env = environment.worker_environment(work, self.temp_dir, threads, pass_env)
        self.process: subprocess.Popen | None = None
        # warm (warm.py): forked from a pre-imported process; else (or when it cannot fork) a new interpreter
        self.forked = warm.fork(threads=threads, pass_env=pass_env, pipes=theirs, log_fd=self.log.fileno(),
                                cwd=str(work), env=env, cgroup=self._procs_files()) if warm is not None else None
        if self.forked is None:
            # "-": the program comes on standard input (trampoline.py): nothing in the command line names the suite
            command = [sys.executable, "-I", "-B", "-u", "-"]
            if self.bubblewrap:
                command = walls.bubblewrap_command(self.bubblewrap, sandbox.Reads(**start["reads"]),
                                                   str(self.temp_dir)) + command
            if self.group is not None:
                command = self.group.join_command() + command
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
                cwd="/" if self.bubblewrap else work, env=env, pass_fds=theirs, start_new_session=True,
            )
        self.warm = self.process is None
        for fd in theirs:
            os.close(fd)
        self.channel = wire.Channel(response_r, request_w, max_bytes=answer_bytes(limits))
        if self.process is not None:
            with contextlib.suppress(BrokenPipeError):  # a worker that died at once: its exit is the error
                self.process.stdin.write(trampoline_program(*theirs))
                self.process.stdin.close()
        self.namespaces = os.environ.get(NAMESPACES_VARIABLE, "") != "off"
        self.channel.write_bytes(boot_message(start["path"], total_s, self.host_dir, namespaces=self.namespaces),
                                 deadline=time.monotonic() + 30)
        self.channel.send({**start, "temp_dir": str(self.temp_dir), "in_bubblewrap": bool(self.bubblewrap)})
        self.exit_report: dict | None = None
        _LIVE.add(self)

    def _procs_files(self) -> list[str]:
        """The files a forked worker writes its pid to, joining its control group before anything else."""
        return [str(path) for path in self.group.procs] if self.group is not None else []

    @staticmethod
    def no_walls() -> dict:
        """The record of a worker never started."""
        return {"bubblewrap": False, "landlock_abi": 0, "pid_namespace": False, "network": "host",
                "file_system": "the machine's", "tmp_mib": None, "memory_cgroup": False, "pids_cgroup": False,
                "cgroup_version": None}

    def walls_record(self) -> dict:
        """What the grader built around this worker itself (the worker's own account is its claim)."""
        group = self.group
        return {"bubblewrap": bool(self.bubblewrap), "landlock_abi": self.landlock_asked,
                "pid_namespace": bool(self.bubblewrap), "network": "none" if self.bubblewrap else "host",
                "file_system": "read-only binds and a tmpfs" if self.bubblewrap else "the machine's",
                "tmp_mib": walls.TMP_MIB if self.bubblewrap else None,
                "memory_cgroup": group is not None and group.memory is not None,
                "pids_cgroup": group is not None and group.pids is not None,
                "cgroup_version": group.version if group is not None else None}

    @property
    def pid(self) -> int | None:
        """The process id of the worker's tree (bubblewrap's, or the supervisor's; a warm worker's once its warm
        process has forked it; None if it never did)."""
        return self.process.pid if self.process is not None else self.forked.pid()

    def supervisor_pid(self) -> int | None:
        """The supervisor's process id: bubblewrap's child (the namespace's first process), else the tree's."""
        pid = self.pid
        for _ in range(1 if self.bubblewrap else 0):
            below = children_of(pid) if pid is not None else []
            pid = below[0] if below else None
        return pid

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
            self._close_group()
            _LIVE.discard(self)
        return self.exit_report

    def _close_group(self) -> None:
        """The control group's count of the worker's memory (shared memory and tmpfs included) replaces the
        supervisor's, which sees its resident pages only; then the group is removed."""
        if self.group is None:
            return
        peak = self.group.peak_mib()
        if peak is not None:
            self.exit_report["max_rss_mib"] = max(peak, self.exit_report.get("max_rss_mib") or 0)
        if self.group.out_of_memory():
            self.exit_report["out_of_memory"] = True
        self.group.remove()
        self.group = None

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
        """The first ``head`` and last ``tail`` bytes of what the worker wrote, read through the descriptor this
        process opened (never by a name), at most those bytes whatever its size."""
        try:
            fd = self.log.fileno()
            size = os.fstat(fd).st_size
            first = os.pread(fd, head, 0)
            last = os.pread(fd, tail, max(0, size - tail))
        except (OSError, ValueError):  # closed
            return {"bytes": 0, "head": "", "tail": ""}
        return {"bytes": size, "head": first.decode(errors="replace"), "tail": last.decode(errors="replace")}

    def cleanup(self) -> None:
        self.stop()
        self.log.close()
        if self.host_dir is not None:
            shutil.rmtree(self.host_dir, ignore_errors=True)

    def usage(self) -> dict:
        """{cpu_s, max_rss_mib} of the worker so far: the supervisor's report once it has ended, else read from
        /proc while it runs (the report is written before the last worker stops). The grader reads /proc itself:
        the worker could lie about its own usage."""
        if self.exit_report is not None:
            return {key: self.exit_report.get(key) for key in ("cpu_s", "max_rss_mib")}
        supervisor = self.supervisor_pid()
        usage = _live_usage(supervisor) if supervisor is not None else {"cpu_s": None, "max_rss_mib": None}
        peak = self.group.peak_mib() if self.group is not None else None
        if peak is not None:
            usage["max_rss_mib"] = max(peak, usage["max_rss_mib"] or 0)
        return usage


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
WORKER_MODULES = ("supervisor", "worker", "wire", "sandbox", "walls", "environment", "importing", "notebooks",
                  "frameworks")
_SOURCES: dict[str, str] = {}


def trampoline_program(*fds: int) -> bytes:
    """The worker's program, for its standard input: trampoline.py and the call naming its pipes."""
    return (Path(__file__).with_name("trampoline.py").read_text() + f"\nstart{fds}\n").encode()


def boot_message(path: list[str], total_s: float, host_dir: Path | None = None, *, namespaces: bool = True) -> bytes:
    """What the trampoline reads first: its import path, the total time limit, the worker's modules' sources, and
    the worker's folder on this machine's disk (None in bubblewrap's tmpfs), which the supervisor removes."""
    if not _SOURCES:
        _SOURCES.update({name: Path(__file__).with_name(f"{name}.py").read_text() for name in WORKER_MODULES})
    body = json.dumps({"path": path, "total_s": total_s, "modules": _SOURCES,
                       "host_dir": None if host_dir is None else str(host_dir), "namespaces": namespaces}).encode()
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
         namespace: str = "", host_dir: str | None = None) -> int:
    """The worker's tree: this process forks; the child serves (``serve``: ``worker.serve``), this one
    supervises it. ``namespace``: what ``sandbox.enter_pid_namespace`` made of this process before (the
    trampoline calls it while the process has one thread): "user+pid", "pid", or "" (none; the supervisor is
    then a subreaper). ``host_dir``: the worker's folder on the machine's disk, removed when it ends, even when
    the grader was killed (in bubblewrap's tmpfs there is none)."""
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
    try:
        return supervise(child, control_fd, status_fd, total_s)
    finally:
        if host_dir:
            shutil.rmtree(host_dir, ignore_errors=True)  # fd-based: a link the worker left there is not followed


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
