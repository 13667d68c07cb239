"""What the worker does to itself before it imports the candidate: resource limits and Landlock.

Resource limits (``setrlimit``, POSIX): address space, CPU seconds, open files, file size, processes,
no core files. Linux does not apply the process limit to root; the other limits hold for everyone.

Landlock (Linux 5.13+, unprivileged; https://docs.kernel.org/userspace-api/landlock.html) makes the
kernel refuse, for the worker and everything it starts:

- writing, creating, renaming or deleting any file outside the worker's temporary directory;
- reading the suite's private files: the golden fixtures, the built-in implementations and the
  float64 oracle (a submission must compute, not look up or delegate);
- TCP bind and connect (ABI 4+), and signals and abstract Unix sockets to processes outside the
  sandbox (ABI 6+): the worker cannot kill or talk to the grader.

Where the kernel lacks Landlock the worker runs without it and the report says so
(``isolation.landlock``); the other limits still apply.
"""

from __future__ import annotations

import ctypes
import os
import resource
from pathlib import Path

# Linux syscall numbers (the same on every architecture, they were added after the unification).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# LANDLOCK_ACCESS_FS_* (include/uapi/linux/landlock.h), by the ABI version that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none (or a seccomp filter hides it)."""
    try:
        version = _libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def _fs_rights(abi: int) -> int:
    return FS_BY_ABI[max(v for v in FS_BY_ABI if v <= abi)]


def restrict(*, writable: list[Path], hidden: list[Path]) -> int:
    """Apply Landlock to this process: write only beneath ``writable``, read anything but ``hidden``.
    Returns the ABI applied, 0 when Landlock is not available (nothing is changed then)."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    libc, handled = _libc(), _fs_rights(abi)
    attr = _Ruleset(fs=handled, net=(NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0,
                    scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return 0
    try:
        read = EXECUTE | READ_FILE | READ_DIR
        _allow(libc, ruleset, Path("/"), READ_DIR)  # listing is harmless; reading files is what is refused
        for path in readable_except(hidden):
            _allow(libc, ruleset, path, read)
        for path in writable:
            _allow(libc, ruleset, path, handled)
        _allow(libc, ruleset, Path("/dev/null"), READ_FILE | WRITE_FILE | (IOCTL_DEV if abi >= 5 else 0))
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def _allow(libc, ruleset: int, path: Path, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            access &= FILE_ONLY
        rule = _PathBeneath(allowed_access=access, parent_fd=fd)
        libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(fd)


def readable_except(hidden: list[Path]) -> list[Path]:
    """Paths whose subtrees cover the whole file system except ``hidden`` (Landlock only allows):
    every sibling along the way from ``/`` down to each hidden path."""
    hidden = [Path(os.path.realpath(p)) for p in hidden]
    on_the_way = {parent for path in hidden for parent in path.parents} | set(hidden)
    allowed, todo = [], [Path("/")]
    while todo:
        directory = todo.pop()
        try:
            children = sorted(directory.iterdir())
        except OSError:
            continue
        for child in children:
            if child in hidden:
                continue
            if child in on_the_way and child.is_dir() and not child.is_symlink():
                todo.append(child)
            else:
                allowed.append(child)
    return allowed


def set_limits(*, memory_mib: int, cpu_s: int, files: int, file_mib: int, processes: int) -> None:
    """The worker's resource limits (soft = hard, except CPU: SIGXCPU at the soft limit, then KILL)."""
    mib = 2**20
    for limit, value in (
        (resource.RLIMIT_AS, memory_mib * mib),
        (resource.RLIMIT_NOFILE, files),
        (resource.RLIMIT_FSIZE, file_mib * mib),
        (resource.RLIMIT_CORE, 0),
    ):
        _lower(limit, value, value)
    _lower(resource.RLIMIT_CPU, cpu_s, cpu_s + 5)
    _lower(resource.RLIMIT_NPROC, tasks_of_this_user() + processes, tasks_of_this_user() + processes)


def _lower(limit: int, soft: int, hard: int) -> None:
    current_soft, current_hard = resource.getrlimit(limit)
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(limit, (min(soft, hard), hard))


def tasks_of_this_user() -> int:
    """Threads of every process of this real user: what RLIMIT_NPROC counts against."""
    uid, total = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            total += int(fields.get("Threads", "1").strip() or 1)
    return total
