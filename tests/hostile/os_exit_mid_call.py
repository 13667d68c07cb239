"""Attack: ``os._exit(0)`` inside a part (PE), while the other part (LayerNorm) is honest.

Expected: every PE check an error "exited with status 0 while running positional_encoding"; the worker
is restarted and the LayerNorm checks pass as an honest LayerNorm's do.
"""

import os

import _honest

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        os._exit(0)

    def layer_norm(self, x, gamma, beta, eps):
        return _honest.layer_norm(x, gamma, beta, eps)


adapter = Adapter()
