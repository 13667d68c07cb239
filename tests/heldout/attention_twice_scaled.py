"""Attention scores multiplied by 2 / sqrt(d_k) (a temperature of 0.5 left in), written with einsum."""

import numpy as np

from conformance import Conventions


def softmax_rows(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def attend(q, k, v, keep):
    logits = np.einsum("bid,bjd->bij", q, k) * (2.0 / np.sqrt(q.shape[-1]))
    if keep is not None:
        logits = np.where(keep, logits, -np.inf)
    p = softmax_rows(logits)
    return np.einsum("bij,bjd->bid", p, v), p


class Adapter:
    conventions = Conventions(mask="keep", dtype="float64", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask):
        return attend(q, k, v, mask)

    def multi_head_attention(self, query, key, value, weights, h, mask):
        def split(x, w, b):
            y = (x @ weights[w] + weights.get(b, 0.0)).reshape(x.shape[0], x.shape[1], h, -1)
            return y.transpose(0, 2, 1, 3).reshape(x.shape[0] * h, x.shape[1], -1)

        B, Lq, d = query.shape
        q, k, v = split(query, "W_Q", "b_Q"), split(key, "W_K", "b_K"), split(value, "W_V", "b_V")
        keep = None if mask is None else np.repeat(mask, h, axis=0)
        out, p = attend(q, k, v, keep)
        merged = out.reshape(B, h, Lq, -1).transpose(0, 2, 1, 3).reshape(B, Lq, d)
        return merged @ weights["W_O"] + weights.get("b_O", 0.0), p.reshape(B, h, Lq, -1)


adapter = Adapter()
