"""§3.1 LayerNorm that takes its mean and variance over the last two axes together (positions and features, as
``nn.LayerNorm([L, d_model])`` or ``x.mean(dim=(-2, -1))`` would), so every row of a sequence is normalised with
the statistics of the whole (L, d_model) block, where the paper normalises each position's vector over its own
d_model features. Right for a single vector (one row); wrong as soon as there are two rows with different
statistics.

Style: NumPy with einsum for the sums, float64; layer_norm only.
"""

import numpy as np

from conformance import Conventions


class EinsumNorm:
    conventions = Conventions(mask="keep", dtype="float64", framework="numpy (einsum)")

    def layer_norm(self, x, gamma, beta, eps):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            block = x[None, :]
        else:
            block = x.reshape(-1, x.shape[-2] * x.shape[-1])  # the bug: one block per sequence, not per row
        count = block.shape[-1]
        mu = np.einsum("bk->b", block) / count
        centred = block - mu[:, None]
        var = np.einsum("bk,bk->b", centred, centred) / count
        normed = (centred / np.sqrt(var[:, None] + eps)).reshape(x.shape)
        return np.asarray(gamma) * normed + np.asarray(beta)


adapter = EinsumNorm()
