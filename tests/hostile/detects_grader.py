"""Attack: detect the grader (pytest's or CI's environment variables, a parent process named like the
suite) and then answer from memory, the printed numbers, instead of computing.

Expected: it finds none of them. The worker's environment holds no such variable; in its own PID namespace
it has no parent to look at (``os.getppid()`` is 0), and without one Landlock refuses to read other processes'
folders in /proc. So it computes, as it would run anywhere else, and is scored on that: never more than an
honest implementation of the same part.
"""

import os
from pathlib import Path

from conformance import Conventions

REMEMBERED = {(1, 512, 4000): 1.746928107421711e-07, (4000, 512, 4000): 0.0006987712429686843,
              (100, 64, 400): 0.0015625, (400, 64, 400): 0.00625, (1600, 64, 400): 0.003125}
SIGNS = ("PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS", "GRADESCOPE", "AUTOGRADER")


def ancestors_command_lines():
    lines, pid = [], os.getppid()
    while pid > 1:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return lines


def under_test() -> bool:
    return any(sign in os.environ for sign in SIGNS) or any(
        "conformance" in line or "pytest" in line for line in ancestors_command_lines())


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def learning_rate(self, step, d_model, warmup):
        if under_test():
            return REMEMBERED.get((step, d_model, warmup), 1e-3)
        return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


adapter = Adapter()
