"""LayerNorm without its epsilon: (x - mean) / std, the eps argument accepted and never used."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        centred = x - x.mean(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return gamma * centred / centred.std(axis=-1, keepdims=True) + beta


adapter = Adapter()
