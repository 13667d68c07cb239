"""Attack: answer with a view of its own buffer, then rewrite that buffer on the next call, so that an
answer already checked changes afterwards (or aliases an input of the grader).

The LayerNorm it computes is right. Expected: each answer is copied at the boundary, later scribbles
change nothing, and the LayerNorm checks pass exactly as an honest LayerNorm's do.
"""

import _honest

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")
    previous = []

    def layer_norm(self, x, gamma, beta, eps):
        for earlier in self.previous:
            earlier[...] = 1e6  # scribble over every answer given before
        out = _honest.layer_norm(x, gamma, beta, eps)
        x[...] = out  # and alias the input: the answer is a view of the grader's x
        self.previous.append(x)
        return x[...]


adapter = Adapter()
