"""Attack: the system calls a socket filter alone would miss, tried from inside a call: a socket made through
io_uring (IORING_OP_SOCKET, no socket(2) call), System V shared memory (which, without an IPC namespace of its own,
reads and keeps other processes' segments by number), a user namespace of its own (kernel surface), ptrace and
the kernel's keyrings. It raises with what each returned.

Expected: each refused (EACCES, EPERM, or ENOSYS for x86_64's x32 numbering), in bubblewrap and without.
"""

import ctypes
import platform

import _honest

from conformance import Conventions

ARM = platform.machine() in ("aarch64", "arm64")
CALLS = {  # name: (x86_64 number, aarch64 number, arguments)
    "io_uring_setup": (425, 425, (8, 0)),
    "shmget": (29, 194, (0, 1 << 20, 0o1000 | 0o600)),
    "msgget": (68, 186, (0, 0o1000 | 0o600)),
    "unshare(CLONE_NEWUSER)": (272, 97, (0x10000000,)),
    "ptrace(PTRACE_TRACEME)": (101, 117, (0, 0, 0, 0)),
    "keyctl": (250, 219, (0, 0, 0)),
    "socket(AF_UNIX)": (41, 198, (1, 1, 0)),
    "x32 socket": (41 | 0x40000000, None, (1, 1, 0)),
}


def attempts() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    out = []
    for name, (x86, arm, args) in CALLS.items():
        number = arm if ARM else x86
        if number is None:
            continue
        result = libc.syscall(number, *(ctypes.c_long(a) for a in args))
        out.append(f"{name}: " + (f"refused errno {ctypes.get_errno()}" if result < 0 else f"ALLOWED ({result})"))
    return "; ".join(out)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        raise RuntimeError(attempts())

    def layer_norm(self, x, gamma, beta, eps):
        return _honest.layer_norm(x, gamma, beta, eps)


adapter = Adapter()
