"""§3.1 LayerNorm whose mean leaves out the first feature: the loop that sums the features starts at 1
(``for j in range(1, d)``) and the sum is divided by d, so mu' = (x_1 + ... + x_{d-1}) / d = mu - x_0 / d; the
variance and the numerator are then centred on that mu' (sigma'^2 = mean((x - mu')^2) = sigma^2 + (x_0 / d)^2),
output gamma * (x - mu') / sqrt(sigma'^2 + eps) + beta, where the paper's layer normalisation (Ba et al., 2016)
uses the mean of all d features, mu = (x_0 + ... + x_{d-1}) / d. Right only for rows whose first feature is 0. The
variance loop, eps, gamma and beta are right.

Style: NumPy with explicit loops over the feature axis (each step vectorised over the rows), float64; layer_norm
only.
"""

import numpy as np

from conformance import Conventions


def layer_norm(x, gamma, beta, eps):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    total = np.zeros(x.shape[:-1])
    for j in range(1, d):
        total += x[..., j]
    mu = total / d
    squares = np.zeros(x.shape[:-1])
    for j in range(d):
        squares += (x[..., j] - mu) ** 2
    var = squares / d
    x_hat = (x - mu[..., None]) / np.sqrt(var[..., None] + eps)
    return gamma * x_hat + beta


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy (loops)")
    layer_norm = staticmethod(layer_norm)


adapter = Adapter()
