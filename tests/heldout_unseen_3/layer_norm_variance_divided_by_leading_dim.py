"""§3.1 LayerNorm whose variance divides the sum of squared deviations by the size of the input's first axis,
``x.shape[0]`` (the batch size for a (B, L, d) input, the number of rows for an (N, d) one), instead of the number
of features d = ``x.shape[-1]``: sigma^2 = sum_j (x_j - mu)^2 / x.shape[0]. The mean (over the d features) is
right, as are eps inside the root, gamma and beta; the paper's (Ba et al.'s) variance is the mean over the d
features of each vector. Right only when the first axis happens to have d entries (a 1-D input); otherwise every
row is divided by sqrt(d / shape[0]) times the right standard deviation.

Style: NumPy with explicit sums and keepdims, float32; layer_norm only.
"""

import numpy as np

from conformance import Conventions


class SumNorm:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        x = np.asarray(x, dtype=np.float32)
        mu = x.sum(axis=-1, keepdims=True) / x.shape[-1]
        dev = x - mu
        var = (dev * dev).sum(axis=-1, keepdims=True) / x.shape[0]
        return (gamma * dev / np.sqrt(var + np.float32(eps)) + beta).astype(np.float32)


adapter = SumNorm()
