"""§3.2.1 scaled dot-product attention that multiplies the scores by sqrt(d_k) instead of dividing by it:
softmax(Q K^T * sqrt(d_k)) V (``scores * np.sqrt(d_k)``, the operator slipped), where the paper scales the dot
products by 1/sqrt(d_k): softmax(Q K^T / sqrt(d_k)) V. The scores are d_k times larger than the paper's, the
softmax far sharper. The mask (hidden keys at -inf, a fully hidden row giving weights 0), the softmax over the keys
and the product with V are right; with d_k = 1 nothing shows.

Style: NumPy with einsum, boolean keep masks, float64; scaled_dot_product_attention only.
"""

import numpy as np

from conformance import Conventions


class EinsumAttention:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask):
        d_k = q.shape[-1]
        scores = np.einsum("bqd,bkd->bqk", q, k) * np.sqrt(d_k)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        top = np.max(scores, axis=-1, keepdims=True)
        e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
        z = e.sum(-1, keepdims=True)
        w = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
        return np.einsum("bqk,bkd->bqd", w, v), w


adapter = EinsumAttention()
