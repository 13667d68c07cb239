"""Attack: kill the grader. SIGKILL to the parent and the grandparent process on the first call (the
grader would die before it writes a report, and a CI job might read the silence as a pass).
Expected: in its own PID namespace the worker has no parent it can see (``os.getppid()`` is 0) nor any
process outside to name; without one, signals to processes outside the worker's sandbox are refused
(Landlock signal scoping). The grader writes its report; the PE checks pass as an honest PE's do.
"""

import os
import signal
from pathlib import Path

import _honest

from conformance import Conventions


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def ancestors() -> list[int]:
    found, pid = [], os.getppid()
    while pid > 1 and len(found) < 2:
        found.append(pid)
        try:
            pid = parent_of(pid)
        except (OSError, ValueError, IndexError):
            break
    return found


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        for pid in reversed(ancestors()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
