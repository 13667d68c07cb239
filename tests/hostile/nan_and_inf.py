"""Attack: NaN and inf, which compare unequal to everything and slip through careless ``not (a > b)`` tests.

Expected: each check an error naming the non-finite values (LayerNorm: NaN, PE: inf, rate: inf).
"""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return np.full(np.shape(x), np.nan)

    def positional_encoding(self, n, d_model):
        return np.full((n, d_model), np.inf)

    def learning_rate(self, step, d_model, warmup):
        return float("inf")


adapter = Adapter()
