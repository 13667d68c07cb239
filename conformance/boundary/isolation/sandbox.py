"""What the worker does to itself before it imports the candidate: namespaces, resource limits, Landlock.

Namespaces (Linux; unprivileged where the kernel allows user namespaces): the supervisor enters a new user
and PID namespace before it forks the worker, so the worker is process 1 of its own PID namespace and sees no
process but its own and those it starts; the worker mounts a fresh ``/proc`` in a mount namespace of its own,
so ``/proc`` lists those processes only, then gives up every capability. Where user namespaces are refused a
PID namespace alone is tried (root); where that is refused too, nothing changes and the report says so.

Resource limits (``setrlimit``, POSIX): address space, CPU seconds, open files, file size, processes,
no core files. Linux does not apply the process limit to root; the other limits hold for everyone.

Landlock (Linux 5.13+, unprivileged; https://docs.kernel.org/userspace-api/landlock.html) makes the
kernel refuse, for the worker and everything it starts:

- reading or listing any file outside what it may read (``Reads``, from ABI 1): its own folder, the Python
  installation and its packages, the system's libraries, its temporary directory; the suite's files only
  as far as an implementation needs them (the adapter protocol's modules), never its golden fixtures;
- writing, creating, renaming or deleting any file outside the worker's temporary directory (ABI 1);
- TCP bind and connect (ABI 4+), and signals and abstract Unix sockets to processes outside the
  sandbox (ABI 6+): the worker cannot kill or talk to the grader.

Where the kernel lacks Landlock the worker runs without it and the report says so
(``isolation.landlock_abi`` 0, ``reads_confined`` false); the other limits still apply.
"""

from __future__ import annotations

import ctypes
import os
import resource
from dataclasses import dataclass, field
from pathlib import Path

# Linux syscall numbers (the same on every architecture, they were added after the unification).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24

# LANDLOCK_ACCESS_FS_* (include/uapi/linux/landlock.h), by the ABI version that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
READS_ABI = 1  # reading and listing are refused from the first ABI on

# What a process needs of the system to run Python and its packages' native libraries: the libraries and the
# dynamic loader's cache, the time zone, the CPU description numeric libraries read, the random devices.
SYSTEM_TREES = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/sys/devices/system/cpu")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/dev/urandom", "/dev/random")
PROC_FILES = ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat")  # system-wide, no process's: without a private /proc


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


@dataclass
class Reads:
    """What the worker may read, as plain lists of paths (the grader builds it, the start message carries it).

    ``trees``: read, list and execute anything beneath; ``listable``: list beneath, read nothing (a package
    folder whose modules are read one by one); ``files``: read and execute these files; ``hidden``: not covered
    by a tree above them (it is opened up around them); a tree or file named at or below one still counts.
    """

    trees: list[str] = field(default_factory=list)
    listable: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"trees": list(self.trees), "listable": list(self.listable), "files": list(self.files),
                "hidden": list(self.hidden)}


def restrict(*, writable: list[Path], reads: Reads, private_proc: bool = False) -> int:
    """Apply Landlock to this process: read only what ``reads`` names, write only beneath ``writable``.
    ``private_proc``: /proc is this process's own (its PID namespace's): readable whole; else only its own
    /proc/PID and the system-wide files of ``PROC_FILES``. Returns the ABI applied, 0 when Landlock is not
    available (nothing is changed then)."""
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
        for path, access in read_rules(reads, private_proc):
            _allow(libc, ruleset, Path(path), access)
        for path in writable:
            _allow(libc, ruleset, path, handled)
        _allow(libc, ruleset, Path("/dev/null"), READ_FILE | WRITE_FILE | (IOCTL_DEV if abi >= 5 else 0))
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def read_rules(reads: Reads, private_proc: bool) -> list[tuple[str, int]]:
    """(path, access) of every read rule: the trees (opened up around hidden paths), the system's trees and
    files, /proc as ``restrict`` says, the listable folders and the single files."""
    # /proc/self is resolved by the kernel, in /proc's own PID namespace: this process's folder there
    trees = [*reads.trees, *SYSTEM_TREES, "/proc" if private_proc else "/proc/self"]
    files = [*reads.files, *SYSTEM_FILES, *([] if private_proc else PROC_FILES)]
    rules = [(str(path), access) for tree in trees for path, access in readable_except(Path(tree), reads.hidden)]
    rules += [(path, READ_DIR) for path in reads.listable]
    return rules + [(path, EXECUTE | READ_FILE) for path in files]


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


def readable_except(root: Path, hidden: list[str]) -> list[tuple[Path, int]]:
    """(path, access) rules that cover ``root`` except the ``hidden`` paths strictly beneath it (Landlock only
    allows): ``root`` itself when none is, else every sibling along the way from ``root`` down to each hidden
    path, and the folders along the way listable (names are not contents; the import system lists a folder
    to find a module in it). A root at or beneath a hidden path was named on purpose (a package's helpers):
    it stays whole."""
    root = Path(os.path.realpath(root))
    below = [path for path in map(Path, map(os.path.realpath, hidden)) if path != root and path.is_relative_to(root)]
    if not below:
        return [(root, READ)]
    on_the_way = {parent for path in below for parent in path.parents if parent.is_relative_to(root)}
    rules, todo = [], [root]
    while todo:
        directory = todo.pop()
        rules.append((directory, READ_DIR))
        try:
            children = sorted(directory.iterdir())
        except OSError:
            continue
        for child in children:
            if child in below:
                continue
            if child in on_the_way and child.is_dir() and not child.is_symlink():
                todo.append(child)
            else:
                rules.append((child, READ))
    return rules


# -- namespaces ---------------------------------------------------------------------------------
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
CAP_LAST = 63  # capability numbers are below 64; dropping one the kernel does not know fails harmlessly


def enter_pid_namespace() -> str:
    """Make this process's next child process 1 of a new PID namespace (the supervisor, before it forks the
    worker): with a new user namespace that maps this process's user and group to themselves (unprivileged,
    where the kernel allows it), else a PID namespace alone (root). Returns "user+pid", "pid", or "" when the
    kernel refused both."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER) == 0:
        _map_ids(uid, gid)
        if libc.unshare(CLONE_NEWPID) == 0:
            return "user+pid"
        return ""
    return "pid" if libc.unshare(CLONE_NEWPID) == 0 else ""


def _map_ids(uid: int, gid: int) -> None:
    """The user namespace's only user and group: this process's own, so that ids and file owners read the
    same as outside (an unprivileged process may map itself only, and must give up setgroups first)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
        except OSError:  # setgroups is absent before Linux 3.19; a map refused leaves the ids unmapped
            pass


def mount_private_proc() -> bool:
    """In a mount namespace of this process's own, a fresh /proc of its PID namespace over the system's: it
    lists this namespace's processes only. False (nothing changed) where the kernel refuses (a container
    that hides parts of its /proc)."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:  # nothing mounted here leaks out
        return False
    return libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0


SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE = 442, -100, 0x8000  # mount_setattr: Linux 5.12
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
MS_BIND = 4096
CLONE_NEWNET, CLONE_NEWIPC = 0x40000000, 0x08000000


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _mount_setattr(path: str, *, set_: int = 0, clear: int = 0, recursive: bool = True) -> bool:
    attr = _MountAttr(attr_set=set_, attr_clr=clear)
    return _libc().syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE if recursive else 0,
                           ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))) == 0


TMP_MIB = 256  # the worker's temporary folder, a tmpfs of this size: its files, HOME and TMPDIR (a checkpoint fits)


def freeze_file_system(writable: Path) -> bool:
    """In the worker's own mount namespace (``mount_private_proc`` made it): its temporary folder becomes a tmpfs of
    ``TMP_MIB`` (in memory, which its control group counts, never the machine's disk), and every other mount
    read-only, without set-user-id and, where /dev is a mount of its own, without device nodes (/dev keeps its
    devices). A mode, a time or a file outside its folder cannot change (Landlock refuses writes, not ``chmod``
    nor ``utime``); a device node a submission ships cannot be opened. False (nothing changed) where the kernel
    refuses (before Linux 5.12)."""
    folder = str(writable)
    options = f"size={TMP_MIB}m,mode=0700".encode()
    if _libc().mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        return False
    work = writable / "work"  # the working folder it was started in is beneath the tmpfs now: made anew
    work.mkdir(exist_ok=True)
    os.chdir(work)
    separate_dev = os.path.ismount("/dev")
    if not _mount_setattr("/", set_=MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | (MOUNT_ATTR_NODEV if separate_dev else 0)):
        return False
    if separate_dev:
        _mount_setattr("/dev", clear=MOUNT_ATTR_NODEV, recursive=False)
    return _mount_setattr(folder, clear=MOUNT_ATTR_RDONLY)


def leave_network_and_ipc() -> bool:
    """Network and IPC namespaces of the worker's own: no interface but a loopback that is down (no packet leaves,
    abstract Unix sockets of the machine out of reach), and no System V shared memory, semaphore or queue of the
    machine's (what it makes there ends with it). False where the kernel refuses either."""
    return _libc().unshare(CLONE_NEWNET | CLONE_NEWIPC) == 0


# seccomp (Linux 3.5+): system calls a computation never needs fail, for the worker and what it starts. Sockets
# (socket(2), and io_uring, which makes sockets without it) are how a process reaches a daemon (a named Unix socket,
# which neither Landlock nor a read-only mount refuses) or a network; System V IPC reaches other processes' shared
# memory by number (without an IPC namespace of its own); ptrace, process_vm_*, bpf, userfaultfd, perf_event_open
# and the kernel's keyrings reach into other processes or the kernel; a user namespace of its own (unshare or clone
# with CLONE_NEWUSER; clone3, whose flags a filter cannot read, answers ENOSYS and the C library falls back to
# clone) is kernel surface. The worker's channel is pipes made before; socketpair(2) and memfd stay allowed.
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64 = 0xC000003E, 0xC00000B7
X32_SYSCALL_BIT = 0x40000000  # x86_64's x32 numbering: another way to name every call, refused whole
REFUSED_CALLS = {  # by architecture: socket, io_uring_setup/enter/register, System V IPC, ptrace and the rest above
    AUDIT_ARCH_X86_64: (41, 425, 426, 427, 29, 30, 31, 64, 65, 66, 68, 69, 70, 71, 220, 101, 310, 311, 321, 323, 298,
                        248, 249, 250),
    AUDIT_ARCH_AARCH64: (198, 425, 426, 427, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 117, 270, 271,
                         280, 282, 241, 217, 218, 219),
}
NAMESPACE_CALLS = {AUDIT_ARCH_X86_64: (272, 56), AUDIT_ARCH_AARCH64: (97, 220)}  # unshare, clone: flags in arg 0
CLONE3 = 435
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
EACCES, EPERM, ENOSYS = 13, 1, 38
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg 0's low word, little-endian)


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _refuse(errno: int) -> tuple:
    return (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno)


def _architecture_rules(arch: int) -> list[tuple]:
    """The filter's instructions for one architecture, once its number is loaded: (code, jt, jf, k) each."""
    rules = [(BPF_LD_W_ABS, 0, 0, NR)]
    if arch == AUDIT_ARCH_X86_64:
        rules += [(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT), _refuse(ENOSYS)]
    for number in REFUSED_CALLS[arch]:
        rules += [(BPF_JEQ_K, 0, 1, number), _refuse(EACCES)]
    rules += [(BPF_JEQ_K, 0, 1, CLONE3), _refuse(ENOSYS)]
    for number in NAMESPACE_CALLS[arch]:  # this call? then CLONE_NEWUSER in its flags: refused; else allowed
        rules += [(BPF_JEQ_K, 0, 4, number), (BPF_LD_W_ABS, 0, 0, ARG0), (BPF_JSET_K, 0, 1, CLONE_NEWUSER),
                  _refuse(EPERM), (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    return [*rules, (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]


def filter_program() -> list[tuple]:
    """The whole filter: per known architecture its rules; any other architecture is let through (the filter is a
    wall among others there)."""
    program = []
    for arch in REFUSED_CALLS:
        rules = _architecture_rules(arch)
        program += [(BPF_LD_W_ABS, 0, 0, ARCH), (BPF_JEQ_K, 0, len(rules), arch), *rules]
    return [*program, (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]


def narrow_system_calls() -> bool:
    """Install the seccomp filter of ``filter_program``; False where the kernel refuses it."""
    program = filter_program()
    filters = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    prog = _SockFprog(len(program), filters)
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Give up every capability, for this process and what it runs (the bounding set first, which needs one):
    the worker needed them only to mount its /proc; without them it cannot unmount it, nor mount anything."""
    libc = _libc()
    for cap in range(CAP_LAST + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3: two words
    libc.capset(ctypes.byref(header), data)
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


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
