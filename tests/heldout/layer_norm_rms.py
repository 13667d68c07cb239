"""RMSNorm where the paper has LayerNorm: x / sqrt(mean(x^2) + eps), no centring (a formula no constant of the
paper's LayerNorm gives: nothing should be described as one)."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return gamma * x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) + beta


adapter = Adapter()
