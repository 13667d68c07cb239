"""Reaching the worker process cheaply: its memory for large messages, its CPU for the calls.

**Memory.** A message of several megabytes (the base-size weights, 252 MB; a weight dump, 91 MB) costs
far more through a pipe than the copy itself: the pipe holds 1 MiB, so the two processes take turns 250
times, each turn a wake-up of the other's CPU (measured: 0.36 s more than in-process for the weights).
Linux's ``process_vm_writev``/``process_vm_readv`` copy straight between two processes' memory in one
system call (0.06 s for the same 252 MB). Only the grader calls them, and only on the worker: it writes a
request's buffers into a block the worker names, and reads an answer's buffers from where the worker says
they are. Either way the grader touches only the worker's memory (``supervisor.Worker.checked_pid``: the process
its hello named, believed only while it is the supervisor's child, so a lying hello cannot point the grader
at another process; in its own PID namespace the worker names itself 1, and the grader finds which of the
supervisor's children that is: ``child_with_inner_pid``), and only
its own buffers or blocks of the sizes the message's header announced. Where the kernel refuses (a
container's seccomp profile, a worker that made itself non-dumpable, an address that is not mapped), the
bytes go through the pipe as before.

**CPU.** A call is a round trip: the grader writes and sleeps, the worker wakes, computes, writes and
sleeps, the grader wakes. With the two on different CPUs each turn wakes an idle CPU, which on a virtual
machine is slow (about 0.5 ms after a few milliseconds idle), and each side comes back to caches the
other's CPU did not warm. They never run at the same time within a call, so during one (``SharedCpu``)
the grader's thread and the worker are both held on the CPU the grader was on: the grader's sleep hands
that CPU straight to the worker, and the worker's answer hands it back. The grader's own CPU set is
restored when the answer has arrived, so between calls it runs wherever the scheduler puts it. Not done
when the worker runs several torch threads (they would share one CPU).
"""

from __future__ import annotations

import contextlib
import ctypes
import os

import numpy as np

IOV_MAX = 1024  # iovecs per call the kernel accepts


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _libc_function(name: str):
    try:
        function = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_ssize_t if name.startswith("process_vm") else ctypes.c_int
    return function


_WRITEV, _READV, _GETCPU = (_libc_function(n) for n in ("process_vm_writev", "process_vm_readv", "sched_getcpu"))


def direct_copies_possible() -> bool:
    return _WRITEV is not None and _READV is not None


def address_of(buffer) -> int:
    """Where a buffer's bytes start in this process (read-only buffers too)."""
    return np.frombuffer(buffer, dtype=np.uint8).ctypes.data


def write_into(pid: int, pieces: list[tuple[int, int, int]]) -> bool:
    """Copy (local address, remote address, size) pieces into process ``pid``; True when every byte moved."""
    return _transfer(_WRITEV, pid, pieces)


def read_from(pid: int, pieces: list[tuple[int, int, int]]) -> bool:
    """Copy (local address, remote address, size) pieces out of process ``pid``; True when every byte moved."""
    return _transfer(_READV, pid, pieces)


def _transfer(function, pid: int, pieces: list[tuple[int, int, int]]) -> bool:
    if function is None:
        return False
    pieces = [piece for piece in pieces if piece[2] > 0]
    for start in range(0, len(pieces), IOV_MAX):
        batch = pieces[start:start + IOV_MAX]
        local = (_IOVec * len(batch))(*(_IOVec(here, size) for here, _, size in batch))
        remote = (_IOVec * len(batch))(*(_IOVec(there, size) for _, there, size in batch))
        if function(pid, local, len(batch), remote, len(batch), 0) != sum(size for _, _, size in batch):
            return False  # refused, or a partial copy (an unmapped address): the caller uses the pipe
    return True


def child_with_inner_pid(parent: int, inner: int) -> int | None:
    """The child of ``parent`` that its own PID namespace numbers ``inner`` (the last of its ``NSpid``: the
    worker, process 1 of its namespace, names itself 1), as this process numbers it; None if no child is."""
    for child in children_of(parent):
        try:
            with open(f"/proc/{child}/status") as status:
                numbers = next((line.split()[1:] for line in status if line.startswith("NSpid:")), [str(child)])
        except OSError:  # it ended meanwhile
            continue
        if numbers and numbers[-1] == str(inner) and parent_of(child) == parent:
            return child
    return None


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


class SharedCpu:
    """During a call, the grader's thread and the worker on one CPU: the one the grader is on."""

    def __init__(self, pid: int):
        self.pid, self.worker_cpu, self.enabled = pid, None, _GETCPU is not None
        self.grader_cpus = os.sched_getaffinity(0) if self.enabled else set()

    @contextlib.contextmanager
    def call(self):
        if not self.enabled or not self._pin():
            yield
            return
        try:
            yield
        finally:
            self._unpin()

    def _unpin(self) -> None:
        try:
            os.sched_setaffinity(0, self.grader_cpus)
        except OSError:  # its CPUs changed meanwhile (a cpuset): every CPU it may use, never stuck on one
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, range(os.cpu_count() or 1))

    def _pin(self) -> bool:
        cpu = _GETCPU()
        try:
            if cpu != self.worker_cpu:
                os.sched_setaffinity(self.pid, {cpu})
                self.worker_cpu = cpu
            os.sched_setaffinity(0, {cpu})
        except OSError:  # the worker ended, or this system does not allow it: the scheduler places both
            self.enabled = False
            return False
        return True
