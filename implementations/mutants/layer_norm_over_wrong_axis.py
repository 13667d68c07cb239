"""LayerNorm normalises each feature over the first (batch) axis, as BatchNorm does, not each row over its features.

Violates §3.1 (Ba et al. 2016, "Layer normalization"): mu and sigma are the mean and variance of one
position's d_model features, so every position is normalised alone. On a single vector (one axis) the
two agree; on a batch, rows are normalised against each other.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class OverFirstAxis(NumpyAdapter):
    def layer_norm(self, x, gamma, beta, eps):
        centred = x - x.mean(0, keepdims=True)  # the bug: axis 0, not -1
        return gamma * centred / np.sqrt((centred**2).mean(0, keepdims=True) + eps) + beta


adapter = OverFirstAxis()
