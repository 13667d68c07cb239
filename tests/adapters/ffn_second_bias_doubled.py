"""A feed-forward network that adds its second bias twice: max(0, x W1 + b1) W2 + 2 b2 (no known bug: a test of the
generated neighbourhood, which holds "the term b2 counted twice")."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def feed_forward(self, x, weights):
        return np.maximum(0.0, x @ weights["W1"] + weights["b1"]) @ weights["W2"] + 2 * weights["b2"]


adapter = Adapter()
