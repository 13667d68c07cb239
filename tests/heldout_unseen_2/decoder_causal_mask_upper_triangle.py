"""§3.2.3 decoder layer whose causal mask keeps the upper triangle: the self-attention's keep mask is
``np.triu(ones(T, T))``, so target position t attends to positions t, t+1, ..., T-1 (itself and the future) and
never to the positions before it, where the paper masks out the subsequent positions: position t may read
positions 0..t only (``np.tril``). The diagonal is kept, as in the paper; the padding mask, the cross-attention,
the FFN and the three post-norm sublayers are right.

Style: NumPy closures: a factory builds the sublayer functions closed over the layer's weights, batch-first,
boolean keep masks, float64; decoder_layer only.
"""

import numpy as np

from conformance import Conventions


def _softmax_rows(s, keep):
    s = np.where(keep, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    e = np.where(keep, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _attention(w, prefix, h):
    def get(name):
        return w.get(f"{prefix}.{name}", 0.0)

    def run(x_q, x_kv, keep):
        B, Lq, d = x_q.shape
        d_k = d // h

        def split(t):
            return t.reshape(B, -1, h, d_k).transpose(0, 2, 1, 3)

        q = split(x_q @ w[f"{prefix}.W_Q"] + get("b_Q"))
        k = split(x_kv @ w[f"{prefix}.W_K"] + get("b_K"))
        v = split(x_kv @ w[f"{prefix}.W_V"] + get("b_V"))
        p = _softmax_rows(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k), keep[:, None])
        return (p @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d) @ w[f"{prefix}.W_O"] + get("b_O")

    return run


def _norm(w, prefix, eps):
    def run(x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return w[f"{prefix}.gamma"] * (x - mu) / np.sqrt(var + eps) + w[f"{prefix}.beta"]

    return run


def _ffn(w):
    def run(x):
        return np.maximum(0.0, x @ w["ffn.W1"] + w["ffn.b1"]) @ w["ffn.W2"] + w["ffn.b2"]

    return run


class ClosureDecoder:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        self_attn, cross_attn = _attention(weights, "self_attn", h), _attention(weights, "cross_attn", h)
        norm1, norm2, norm3 = (_norm(weights, f"norm{i}", eps) for i in (1, 2, 3))
        ffn = _ffn(weights)
        T = y.shape[1]
        future = np.triu(np.ones((T, T), dtype=bool))
        self_keep = tgt_mask[:, None, :] & future[None]
        cross_keep = np.broadcast_to(src_mask[:, None, :], (y.shape[0], T, src_mask.shape[1]))
        y = norm1(y + self_attn(y, y, self_keep))
        y = norm2(y + cross_attn(y, memory, cross_keep))
        return norm3(y + ffn(y))


adapter = ClosureDecoder()
