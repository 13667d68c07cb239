"""§3.2.2 multi-head attention that folds the 1/sqrt(d_k) scale into the query *input* before the projection:
Q = (x / sqrt(d_k)) W_Q + b_Q, so the query bias b_Q is not scaled, and the scores are
(x W_Q / sqrt(d_k) + b_Q) . k, where the paper's scores are (x W_Q + b_Q) . k / sqrt(d_k) (the whole query, bias
included, scaled; the same as scaling the projected query). Without attention biases the two agree; with them the
bias term of every score is sqrt(d_k) times too large. The keys, the values, the mask, the head split and merge
and W_O are right.

Style: a NumPy class with one method per step, boolean keep masks, float64; multi_head_attention only.
"""

import numpy as np

from conformance import Conventions


class FoldedScaleAttention:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def _lin(self, x, w, n):
        b = w.get(f"b_{n}")
        return x @ w[f"W_{n}"] + (0.0 if b is None else b)

    @staticmethod
    def _split(t, h):
        B, L, d = t.shape
        return t.reshape(B, L, h, d // h).transpose(0, 2, 1, 3)

    @staticmethod
    def _softmax(s, keep):
        if keep is not None:
            s = np.where(keep[:, None], s, -np.inf)
        top = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
        z = e.sum(-1, keepdims=True)
        return np.divide(e, z, out=np.zeros_like(e), where=z > 0)

    def multi_head_attention(self, query, key, value, weights, h, mask):
        B, Lq, d = query.shape
        d_k = d // h
        q = self._split(self._lin(query / np.sqrt(d_k), weights, "Q"), h)  # scale folded into the input
        k = self._split(self._lin(key, weights, "K"), h)
        v = self._split(self._lin(value, weights, "V"), h)
        p = self._softmax(q @ k.transpose(0, 1, 3, 2), mask)
        ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d)
        return self._lin(ctx, weights, "O"), p


adapter = FoldedScaleAttention()
