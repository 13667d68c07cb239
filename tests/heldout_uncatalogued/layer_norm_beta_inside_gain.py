"""§3.1 LayerNorm that adds the bias before the gain: gamma * (x_hat + beta) where the paper has
gamma * x_hat + beta (the shift is multiplied by gamma too). Pure-Python loops over rows."""

import math

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def layer_norm(self, x, gamma, beta, eps):
        flat = np.asarray(x).reshape(-1, x.shape[-1])
        out = np.empty_like(flat)
        for r, row in enumerate(flat):
            mean = sum(row) / len(row)
            var = sum((v - mean) ** 2 for v in row) / len(row)
            for c, v in enumerate(row):
                out[r, c] = gamma[c] * ((v - mean) / math.sqrt(var + eps) + beta[c])  # the bug: beta inside
        return out.reshape(x.shape)


adapter = Adapter()
