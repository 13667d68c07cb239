"""Attack: one character stops the class; escape codes rewrite the instructor's terminal. Its calls raise (and
first write to its output) MESSAGE, set by the test: a lone surrogate ("\\ud800"), or terminal escape codes (clear the
screen, a fake "score: 101 / 101" line drawn with carriage returns, an OSC 52 clipboard write).

Expected: the class summary is written, the classmates after it are graded, the single grade writes its reports;
no ESC, BEL or lone surrogate reaches NAME.txt or the grader's output, no fake score line starts a line; every
report is valid UTF-8.
"""

import os

from conformance import Conventions

MESSAGE = "\ud800"


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        os.write(1, ("output: " + MESSAGE + "\n").encode("utf-8", "surrogatepass"))
        raise RuntimeError("bad things: " + MESSAGE)

    def layer_norm(self, x, gamma, beta, eps):
        raise ValueError(MESSAGE)


adapter = Adapter()
