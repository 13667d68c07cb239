"""Attack: kill the grader. SIGKILL to the parent and the grandparent process on the first call (the
grader would die before it writes a report, and a CI job might read the silence as a pass).

Expected: signals to processes outside the worker's sandbox are refused (Landlock signal scoping);
the grader writes its report; the PE checks pass as an honest PE's do.
"""

import os
import signal
from pathlib import Path

import _honest

from conformance import Conventions


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        parent = os.getppid()
        for pid in (parent_of(parent), parent):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
