"""A layer norm that never returns: each check that calls it must end with an error, not hang the run."""

import time

from conformance import Conventions


class Hanging:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        while True:
            time.sleep(0.01)


adapter = Hanging()
