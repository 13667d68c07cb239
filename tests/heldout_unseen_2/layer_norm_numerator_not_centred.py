"""§3.1 LayerNorm (Ba et al., 2016) whose numerator is not centred: the variance is the right, centred one,
sigma^2 = mean((x - mu)^2), but the output is gamma * x / sqrt(sigma^2 + eps) + beta, where the paper's layer
normalisation computes gamma * (x - mu) / sqrt(sigma^2 + eps) + beta. The mean is never subtracted from x (the
result equals the right one only for rows whose mean is 0).

Style: NumPy with np.einsum for the row statistics (sums over the last axis), float32; layer_norm only.
"""

import numpy as np

from conformance import Conventions


class EinsumNorm:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        x = np.asarray(x, dtype=np.float32)
        d = x.shape[-1]
        mu = np.einsum("...d->...", x)[..., None] / d
        centred = x - mu
        var = np.einsum("...d,...d->...", centred, centred)[..., None] / d
        return (gamma * x / np.sqrt(var + eps) + beta).astype(np.float32)


adapter = EinsumNorm()
