"""Attack: name the grader as the worker. At import, ``os.getpid`` is made to return the grader's pid (the
supervisor's parent), so the worker's hello names the grader: were it believed, the grader would copy large
messages into and out of its own memory at addresses the worker chooses. In its own PID namespace the worker
cannot see the grader (``os.getppid()`` is 0): it names process 2 there, which is not the worker.

Expected: the grader believes a pid only if a child of the supervisor has that number; large messages then
go through the pipe, the answers are right, and the LayerNorm checks pass as an honest LayerNorm's do.
"""

import os
from pathlib import Path

import _honest

from conformance import Conventions


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def the_grader() -> int:
    try:
        return parent_of(os.getppid())
    except (OSError, ValueError, IndexError):  # no parent to see: the worker is process 1 of its namespace
        return 2


LIE = the_grader()
os.getpid = lambda: LIE


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return _honest.layer_norm(x, gamma, beta, eps)


adapter = Adapter()
