"""§3.2.2 multi-head attention that adds the output bias before the output projection: it returns
(Concat(head_1, ..., head_h) + b_O) W_O, where the output projection of the paper is an affine map applied to the
concatenation, Concat(...) W_O + b_O (b_O added after W_O). Without biases (the paper's formulas have none) the
two agree; with biases the output is off by b_O W_O - b_O. The heads and their weights are right.

Style: NumPy with np.einsum for every projection and for the attention ("bld,dhk->bhlk"), additive masks,
float64; multi_head_attention only.
"""

import numpy as np

from conformance import Conventions


def _softmax(s):
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


class EinsumHeads:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        d = weights["W_Q"].shape[0]
        d_k = d // h
        zero = np.zeros(d)

        def project(x, letter):
            W = weights[f"W_{letter}"].reshape(d, h, d_k)
            b = weights.get(f"b_{letter}", zero).reshape(h, d_k)
            return np.einsum("bld,dhk->bhlk", x, W) + b[None, :, None, :]

        q, k, v = project(query, "Q"), project(key, "K"), project(value, "V")
        scores = np.einsum("bhqk,bhsk->bhqs", q, k) / np.sqrt(d_k)
        if mask is not None:
            scores = scores + mask[:, None]
        p = _softmax(scores)
        heads = np.einsum("bhqs,bhsk->bqhk", p, v)
        concat = heads.reshape(heads.shape[0], heads.shape[1], d)
        out = np.einsum("bqd,de->bqe", concat + weights.get("b_O", zero), weights["W_O"])
        return out, p


adapter = EinsumHeads()
