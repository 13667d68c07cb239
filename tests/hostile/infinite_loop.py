"""Attack: a busy endless loop (no sleep, no I/O) in LayerNorm, the greedy decoder that never stops.

Expected: each LayerNorm check an error "hung", the worker killed; the run finishes in about the timeout.
"""

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        n = 0
        while True:
            n += 1


adapter = Adapter()
