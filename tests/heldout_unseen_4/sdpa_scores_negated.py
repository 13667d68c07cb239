"""§3.2.1 scaled dot-product attention with the sign of the scores flipped: the code treats Q K^T / sqrt(d_k) as an
*energy* and weighs the keys by exp(-energy) (the Boltzmann convention p ∝ e^{-E}), so the weights are
softmax(-Q K^T / sqrt(d_k) + M) (a softmin: the least similar key gets the most weight), where the paper's weights
are softmax(Q K^T / sqrt(d_k) + M). The scaling by 1/sqrt(d_k), the additive mask (hidden keys still get weight 0)
and the product with V are right; the rows still sum to 1.

Style: NumPy with np.einsum and an additive mask (0 / -inf), float32; scaled_dot_product_attention only.
"""

import numpy as np

from conformance import Conventions


def _normalise(logits):
    top = logits.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(logits - top)
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class EnergyAttention:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float32", framework="numpy (einsum)")

    def scaled_dot_product_attention(self, q, k, v, mask):
        energy = np.einsum("bqd,bkd->bqk", q, k) / np.float32(np.sqrt(q.shape[-1]))
        logits = -energy if mask is None else -energy + mask
        weights = _normalise(logits).astype(np.float32)
        return np.einsum("bqk,bkd->bqd", weights, v).astype(np.float32), weights


adapter = EnergyAttention()
