"""§3.2.1/§3.2.3 scaled dot-product attention that returns the attention weights computed *before* the mask was
added: the output softmax(Q K^T / sqrt(d_k) + M) V is right, but the weights it returns are softmax(Q K^T /
sqrt(d_k)) without M, so hidden keys (padding, the future) keep a non-zero weight in the returned map, where the
paper's weights are those the output uses: 0 on every masked key. Without a mask the two agree.

Style: NumPy with an explicit loop over the batch and an additive mask (0 / -inf), a hand-written softmax;
float64; scaled_dot_product_attention only.
"""

import numpy as np

from conformance import Conventions


def _softmax(s):
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


class LoopAttention:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask):
        B, Lq, d_k = q.shape
        outputs, maps = [], []
        for b in range(B):
            scores = q[b] @ k[b].T / np.sqrt(d_k)
            attn = _softmax(scores)  # kept for the attention map
            used = attn if mask is None else _softmax(scores + mask[b])
            outputs.append(used @ v[b])
            maps.append(attn)
        return np.stack(outputs), np.stack(maps)


adapter = LoopAttention()
