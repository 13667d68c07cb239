"""Attack: on its first call, register an ``atexit`` handler that calls ``os._exit(0)``; LayerNorm is wrong.

Unguarded, certify would exit 0 although its own report counts failed checks. Expected: exit code 1, with or
without isolation.
"""

import atexit
import os

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")
    armed = False

    def layer_norm(self, x, gamma, beta, eps):
        if not self.armed:
            atexit.register(os._exit, 0)
            Adapter.armed = True
        return x * gamma + beta  # no normalisation at all


adapter = Adapter()
