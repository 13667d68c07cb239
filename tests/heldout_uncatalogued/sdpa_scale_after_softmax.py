"""§3.2.1 attention that divides by sqrt(d_k) after the softmax: softmax(QK^T) / sqrt(d_k) instead of
softmax(QK^T / sqrt(d_k)); the weights no longer sum to one (they sum to 1/sqrt(d_k)) and the softmax is unscaled.
einsum-heavy NumPy."""

import numpy as np
from _numpy_parts import CONVENTIONS, softmax_keys


def attention(q, k, v, keep):
    logits = np.einsum("...qd,...kd->...qk", q, k)
    if keep is not None:
        logits = np.where(keep, logits, -np.inf)
    weights = softmax_keys(logits) / np.sqrt(q.shape[-1])  # the bug: the scale moved after the softmax
    return np.einsum("...qk,...kd->...qd", weights, v), weights


class Adapter:
    conventions = CONVENTIONS

    def scaled_dot_product_attention(self, q, k, v, mask):
        return attention(q, k, v, mask)

    def multi_head_attention(self, query, key, value, weights, h, mask):
        d = query.shape[-1]
        split = lambda x, n: np.einsum("bld,dhk->bhlk", x, weights[f"W_{n}"].reshape(d, h, d // h)) + \
            weights.get(f"b_{n}", np.zeros(d)).reshape(1, h, 1, d // h)  # noqa: E731 - this style names its lambdas
        out, p = attention(split(query, "Q"), split(key, "K"), split(value, "V"),
                           None if mask is None else mask[:, None])
        merged = np.einsum("bhlk,hkd->bld", out, weights["W_O"].reshape(h, d // h, d))
        return merged + weights.get("b_O", 0.0), p


adapter = Adapter()
