"""Not an attack in itself: a student whose positional encoding takes SLEEP_S seconds a call (honest otherwise),
so that the test can interrupt or kill a class grade while it is in progress.
"""

import time

import _honest

from conformance import Conventions

SLEEP_S = 10


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        time.sleep(SLEEP_S)
        return _honest.positional_encoding(n, d_model)


adapter = Adapter()
