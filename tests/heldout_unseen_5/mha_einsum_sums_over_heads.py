"""§3.2.2 multi-head attention whose score einsum drops the head index: ``np.einsum("bqhc,bkhc->bqk", q, k)``
where ``"bqhc,bkhc->bhqk"`` was meant, so the head axis is summed over with the features: the scores are the
full-width dot products Q K^T of the d_model-wide projections (still divided by sqrt(d_k)), one score map shared by
every head, and each head's values are weighted by that same softmax, where the paper's head i has its own
softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) over its d_k columns. With h = 1 it is right. The projections (W_Q, W_K,
W_V, their biases), the mask, the concatenation and W_O are right; the returned weights are the shared map repeated
for each head.

Style: NumPy with np.einsum throughout (heads as a reshaped axis, no transpose), boolean keep masks, float32;
multi_head_attention only.
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


def _softmax(s):
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class EinsumHeads:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy (einsum)")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {name: np.asarray(a, dtype=F32) for name, a in weights.items()}
        query, key, value = (np.asarray(a, dtype=F32) for a in (query, key, value))
        B, Lq, d = query.shape
        dk = d // h

        def proj(x, n):
            y = np.einsum("bld,de->ble", x, w[f"W_{n}"])
            return (y + w[f"b_{n}"] if f"b_{n}" in w else y).reshape(B, x.shape[1], h, dk)

        q, k, v = proj(query, "Q"), proj(key, "K"), proj(value, "V")
        scores = np.einsum("bqhc,bkhc->bqk", q, k) / F32(np.sqrt(dk))
        if mask is not None:
            scores = np.where(np.asarray(mask, dtype=bool), scores, F32(-np.inf))
        attn = _softmax(scores).astype(F32)  # (B, Lq, Lk)
        ctx = np.einsum("bqk,bkhc->bqhc", attn, v).reshape(B, Lq, d)
        out = np.einsum("bld,de->ble", ctx, w["W_O"])
        out = out + w["b_O"] if "b_O" in w else out
        return out.astype(F32), np.repeat(attn[:, None], h, axis=1)


adapter = EinsumHeads()
