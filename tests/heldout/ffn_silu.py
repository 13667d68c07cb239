"""Feed-forward network with SiLU (swish) where the paper has ReLU; layers named dense_in / dense_out, einsum."""

import numpy as np

from conformance import Conventions


def swish(z):
    return z / (1.0 + np.exp(-z))


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def feed_forward(self, x, weights):
        dense_in = np.einsum("bld,df->blf", x, weights["W1"]) + weights["b1"]
        return np.einsum("blf,fd->bld", swish(dense_in), weights["W2"]) + weights["b2"]


adapter = Adapter()
