"""Attack: print without end (a debug print in a loop that never stops), gigabytes of stdout.

Expected: the worker's output is capped (file-size limit): each LayerNorm check is an error naming
SIGXFSZ and the limit; the grader's own output and memory stay small.
"""

import sys

from conformance import Conventions

LINE = "debug: " + "x" * 1000 + "\n"


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        while True:
            sys.stdout.write(LINE * 1000)


adapter = Adapter()
