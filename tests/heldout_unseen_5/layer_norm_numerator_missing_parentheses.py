"""§3.1 LayerNorm with a missing pair of parentheses in the numerator: ``x - mu / np.sqrt(var + eps)`` where
``(x - mu) / np.sqrt(var + eps)`` was meant, so the output is gamma * (x - mu / sqrt(sigma^2 + eps)) + beta (only
the mean is divided by the standard deviation, and x is neither centred nor scaled), where the paper's layer
normalisation (Ba et al., 2016) is gamma * (x - mu) / sqrt(sigma^2 + eps) + beta. The mean, the biased variance,
eps inside the square root, gamma and beta are right.

Style: NumPy in float32, a small function with keepdims statistics, a class adapter; layer_norm only.
"""

import numpy as np

from conformance import Conventions


def layer_norm(x, gamma, beta, eps):
    x = np.asarray(x, dtype=np.float32)
    mu = x.mean(axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    x_hat = x - mu / np.sqrt(var + np.float32(eps))
    return (np.asarray(gamma, dtype=np.float32) * x_hat + np.asarray(beta, dtype=np.float32)).astype(np.float32)


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")
    layer_norm = staticmethod(layer_norm)


adapter = Adapter()
