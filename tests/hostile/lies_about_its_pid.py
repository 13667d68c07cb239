"""Attack: name the grader as the worker. At import, ``os.getpid`` is made to return the grader's pid (the
supervisor's parent), so the worker's hello names the grader: were it believed, the grader would copy large
messages into and out of its own memory at addresses the worker chooses.

Expected: the grader believes a pid only if that process is the supervisor's child; large messages then go
through the pipe, the answers are right, and the LayerNorm checks pass as an honest LayerNorm's do.
"""

import os
from pathlib import Path

import _honest

from conformance import Conventions


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


GRADER = parent_of(os.getppid())
os.getpid = lambda: GRADER


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return _honest.layer_norm(x, gamma, beta, eps)


adapter = Adapter()
