"""Feed-forward network that keeps only the first half of its inner units (a gate-and-value split, GLU-style, of
which only the value half was kept), written in NumPy with array_split."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def feed_forward(self, x, weights):
        inner = x @ weights["W1"] + weights["b1"]
        kept, _ = np.array_split(inner, 2, axis=-1)
        width = kept.shape[-1]
        return np.maximum(kept, 0.0) @ weights["W2"][:width] + weights["b2"]


adapter = Adapter()
