"""Attack: values of the wrong type: nested lists, a dict, a string, a generator, an object with ``__array__``.

Expected: each check an error naming what came back and what was expected.
"""

import numpy as np

from conformance import Conventions


class LooksLikeAnArray:
    def __init__(self, shape):
        self.shape = shape

    def __array__(self, dtype=None, copy=None):
        return np.zeros(self.shape)


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return [[0.0] * d_model for _ in range(n)]

    def layer_norm(self, x, gamma, beta, eps):
        return LooksLikeAnArray(np.shape(x))

    def learning_rate(self, step, d_model, warmup):
        return "0.001"

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        return (value for value in [0.5])

    def parameter_count(self, config):
        return {"total": 1}


adapter = Adapter()
