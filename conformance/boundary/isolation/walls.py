"""The walls the grader builds around a worker from outside it: bubblewrap and control groups.

What the worker does to itself (Landlock, its limits, its namespaces: ``sandbox.py``) a candidate that runs in
the same process could lie about; what is built here the grader built, and records as its own fact
(``Walls.record``).

**bubblewrap** (https://github.com/containers/bubblewrap; Debian's and Ubuntu's ``bubblewrap``; the sandbox under
Flatpak), found on the grader's ``PATH``, starts the worker in new user, PID, network, IPC, UTS and mount
namespaces whose whole file system is:

- read-only binds of exactly what the worker may read (``Reads``): its own folder, Python and its packages, the
  system's libraries, the suite's adapter protocol (folders it must not read are empty there, never bound);
- a fresh ``/proc`` of its PID namespace, a ``/dev`` holding only null, zero, full, random, urandom and a tty
  (every bind is mounted ``nodev``: a device node in a submission cannot be opened);
- a size-capped tmpfs as ``/tmp``, holding its working folder: its only writable place, gone when it ends;
- no network but its own loopback, and no socket file of the machine (none is bound);

every capability dropped, no user namespace of its own allowed below, in a session of its own, killed when the
grader dies. Its supervisor (``supervisor.main``) is the namespace's first process: the worker's ``/proc`` lists it
and the worker's own processes, nothing of the machine. Nothing it can reach is the
grader's: it cannot change a mode or a time of any file outside its tmpfs (read-only binds), read a classmate's
folder or the instructor's solution (not there), or talk to a daemon (no socket file, no network).

**Control groups**, where the grader may create one (a writable cgroup v2 folder whose memory and pids controllers
are delegated, or cgroup v1's memory and pids hierarchies): the worker's memory is limited and counted with what
it holds in shared memory, memfd and tmpfs (which the address-space limit does not see), and its processes and
threads are counted whatever its user (``RLIMIT_NPROC`` does not hold for root). Its peak memory is read here.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .sandbox import SYSTEM_FILES, SYSTEM_TREES, TMP_MIB, Reads

DEVICE_FILES = ("/dev/urandom", "/dev/random")  # bubblewrap's --dev makes them


# -- bubblewrap -------------------------------------------------------------------------------------
BUBBLEWRAP_VARIABLE = "CONFORMANCE_BUBBLEWRAP"  # "off": the kernel's walls alone (how CI tests the fallback)


def bubblewrap() -> str | None:
    """bubblewrap's path when it is on ``PATH`` (or named by ``CONFORMANCE_BUBBLEWRAP``) and can make its
    namespaces here (a container without user namespaces refuses them: it is then as absent); None otherwise,
    or when ``CONFORMANCE_BUBBLEWRAP=off``."""
    setting = os.environ.get(BUBBLEWRAP_VARIABLE, "")
    if setting == "off":
        return None
    path = shutil.which(setting or "bwrap")
    return path if path is not None and _works(path) else None


@cache
def _works(path: str) -> bool:
    try:
        probe = subprocess.run([path, "--unshare-all", "--unshare-user", "--disable-userns", "--as-pid-1",
                                "--die-with-parent", "--ro-bind", "/", "/", "true"],
                               capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def sandbox_temp_dir() -> str:
    """The worker's temporary folder inside bubblewrap's tmpfs: named like any program's (``tempfile``'s)."""
    return f"/tmp/tmp{secrets.token_hex(4)}"


def bubblewrap_command(bwrap: str, reads: Reads, temp_dir: str, *, tmp_mib: int = TMP_MIB) -> list[str]:
    """bubblewrap's command line for a worker that may read ``reads`` and write its tmpfs at /tmp; the worker's
    own command follows it."""
    work = f"{temp_dir}/work"
    # --as-pid-1: the worker's supervisor is its namespace's first process (no bubblewrap process there whose
    # command line names these paths); --disable-userns: no namespace of its own below this one
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--as-pid-1", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL",
            "--proc", "/proc", "--dev", "/dev", "--size", str(tmp_mib * 2**20), "--tmpfs", "/tmp",
            "--dir", temp_dir, "--dir", work, "--chdir", work]
    for tree in SYSTEM_TREES:
        args += _system_tree(tree)
    for file in SYSTEM_FILES:
        if file not in DEVICE_FILES:
            args += ["--ro-bind-try", file, file]
    hidden = [os.path.realpath(path) for path in reads.hidden]
    above, beneath = _split_trees(reads.trees, hidden)
    for tree in above:
        args += ["--ro-bind-try", tree, tree]
    emptied = [path for path in hidden if any(_within(path, tree) for tree in above)]
    for path in emptied:  # bound with a tree above it: hidden under an empty folder, or an empty file
        args += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
    for tree in beneath:
        args += ["--ro-bind-try", tree, tree]
    for file in dict.fromkeys(os.path.realpath(path) for path in reads.files):
        args += ["--ro-bind-try", file, file]
    for path in emptied:
        if os.path.isdir(path):
            args += ["--remount-ro", path]
    return [*args, "--remount-ro", "/", "--"]


def _system_tree(tree: str) -> list[str]:
    """A merged-/usr system's /lib, /bin...: links, as on the machine; a real folder: bound read-only."""
    if os.path.islink(tree):
        return ["--symlink", os.readlink(tree), tree]
    return ["--ro-bind", tree, tree] if os.path.isdir(tree) else []


def _split_trees(trees: list[str], hidden: list[str]) -> tuple[list[str], list[str]]:
    """The trees to bind before the hidden paths are emptied, and those at or beneath a hidden path (named on
    purpose: a package's helpers), to bind after; each list parents first."""
    real = sorted(dict.fromkeys(os.path.realpath(tree) for tree in trees), key=lambda path: path.count("/"))
    beneath = [tree for tree in real if any(_within(tree, path) for path in hidden)]
    return [tree for tree in real if tree not in beneath], beneath


def _within(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


# -- control groups ---------------------------------------------------------------------------------
CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "conformance-worker-"
STALE_S = 600  # a group this old and empty was left by a grader that was killed
REMOVE_S = 2.0  # how long a group's removal waits for its killed processes to be gone


@dataclass
class ControlGroup:
    """The control group(s) of one worker: cgroup v2's one folder, or v1's memory and pids folders."""

    memory: Path | None = None  # the folder whose memory files limit and count the worker
    pids: Path | None = None
    version: int = 2
    procs: list[Path] = field(default_factory=list)  # the cgroup.procs files the worker joins

    @classmethod
    def create(cls, *, memory_mib: int, tasks: int) -> ControlGroup | None:
        """A fresh control group limiting memory to ``memory_mib`` (shared memory and tmpfs included, no swap)
        and tasks (processes and threads) to ``tasks``; None where the grader may not make one."""
        name = f"{PREFIX}{secrets.token_hex(6)}"
        group = _create_v2(name, memory_mib, tasks) if _unified() else _create_v1(name, memory_mib, tasks)
        if group is not None:
            group.sweep_siblings()
        return group

    def sweep_siblings(self) -> None:
        """Remove the empty groups a grader killed (SIGKILL) left beside this one: an empty group is removable,
        one with processes is not (the kernel refuses); only those older than ``STALE_S``, so that a group just
        made for a worker about to join it is never taken."""
        for folder in dict.fromkeys(path for path in (self.memory, self.pids) if path is not None):
            for sibling in folder.parent.glob(f"{PREFIX}*"):
                with contextlib.suppress(OSError):
                    if sibling != folder and time.time() - sibling.stat().st_mtime > STALE_S:
                        sibling.rmdir()

    def join_command(self) -> list[str]:
        """A prefix that puts the command that follows into this group before it runs (``exec``): nothing the
        worker starts, bubblewrap's namespaces included, is born outside it."""
        writes = " && ".join(f'echo $$ > "${index + 1}"' for index in range(len(self.procs)))
        return ["/bin/sh", "-c", f'{writes} && shift {len(self.procs)} && exec "$@"', "sh",
                *map(str, self.procs)]

    def add(self, pid: int) -> None:
        for procs in self.procs:
            with contextlib.suppress(OSError):
                procs.write_text(str(pid))

    def peak_mib(self) -> float | None:
        """The worker's peak memory as the kernel counted it (anonymous, shared, tmpfs and page cache)."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        value = _read_int(self.memory / name) if self.memory else None
        return None if value is None else round(value / 2**20, 1)

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the group for its memory limit."""
        if self.memory is None:
            return False
        if self.version == 2:
            return _event_count(self.memory / "memory.events", "oom_kill") > 0
        return _event_count(self.memory / "memory.oom_control", "oom_kill") > 0

    def remove(self) -> None:
        """Remove the folders once their processes are gone (the caller killed them)."""
        for folder in dict.fromkeys(path for path in (self.memory, self.pids) if path is not None):
            deadline = time.monotonic() + REMOVE_S
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # its last processes still exiting (the kernel lets go of their memory first)
                    if time.monotonic() > deadline:
                        break  # left to a later grade's sweep
                    _kill_members(folder)
                    time.sleep(0.01)


def _unified() -> bool:
    return (CGROUP_ROOT / "cgroup.controllers").exists()


def _own_group(controller: str) -> str | None:
    """This process's group path in the hierarchy of ``controller`` ("" for cgroup v2's unified one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def _create_v2(name: str, memory_mib: int, tasks: int) -> ControlGroup | None:
    own = _own_group("")
    if own is None:
        return None
    parent = CGROUP_ROOT / own.lstrip("/")
    try:
        delegated = (parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    if not {"memory", "pids"} <= set(delegated):
        return None
    folder = parent / name
    try:
        folder.mkdir()
        (folder / "memory.max").write_text(str(memory_mib * 2**20))
        with contextlib.suppress(OSError):
            (folder / "memory.swap.max").write_text("0")
        (folder / "pids.max").write_text(str(tasks))
    except OSError:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None
    return ControlGroup(memory=folder, pids=folder, version=2, procs=[folder / "cgroup.procs"])


def _create_v1(name: str, memory_mib: int, tasks: int) -> ControlGroup | None:
    made: list[Path] = []
    try:
        memory = _v1_folder("memory", name, made)
        (memory / "memory.limit_in_bytes").write_text(str(memory_mib * 2**20))
        with contextlib.suppress(OSError):  # the swap account exists only where the kernel counts swap
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_mib * 2**20))
        pids = _v1_folder("pids", name, made)
        (pids / "pids.max").write_text(str(tasks))
    except (OSError, TypeError):
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        return None
    return ControlGroup(memory=memory, pids=pids, version=1, procs=[memory / "cgroup.procs", pids / "cgroup.procs"])


def _v1_folder(controller: str, name: str, made: list[Path]) -> Path:
    own = _own_group(controller)
    if own is None:
        raise OSError(f"no cgroup v1 {controller} hierarchy")
    folder = CGROUP_ROOT / controller / own.lstrip("/") / name
    folder.mkdir()
    made.append(folder)
    return folder


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _event_count(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _kill_members(folder: Path) -> None:
    try:
        pids = [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 9)
