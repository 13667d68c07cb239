"""Attack: ignore SIGTERM (and SIGINT), then sleep forever in LayerNorm: a polite kill does nothing.

Expected: the worker is killed anyway (SIGKILL) and each LayerNorm check is an error "hung".
"""

import signal
import time

from conformance import Conventions

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        while True:
            time.sleep(1)


adapter = Adapter()
