"""§3.1 attention sublayer that passes the head *width* where its attention helper expects the number of heads: it
computes ``d_k = d_model // h`` and calls ``_multi_head(x, kv, w, d_k, mask)``, whose fourth parameter is
``n_heads``, so the attention runs with d_k heads of width h: the projections are split into d_model / h column
blocks of h columns each and the scores are divided by sqrt(h), where the paper's MultiHead uses h heads of width
d_k = d_model / h and divides by sqrt(d_k). Wherever h = d_k (d_model = h^2: 16 with 4 heads, 64 with 8) it is right;
with one head it is a single attention over one-column heads. The projections W_Q, W_K, W_V, W_O, the mask, the
softmax over the keys, the residual and the LayerNorm are right.

Style: NumPy in float32 (heads by ``reshape`` + ``transpose``), boolean keep masks (B, Lq, Lk), batch-first;
attention_sublayer only (the code's attention module holds its residual and norm).
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


def _softmax(s):
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
    z = e.sum(axis=-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


def _multi_head(x, kv, w, n_heads, keep):
    B, Lq, d = x.shape
    width = d // n_heads

    def proj(t, n):
        y = t @ w[f"W_{n}"]
        return y + w[f"b_{n}"] if f"b_{n}" in w else y

    split = lambda t: t.reshape(B, t.shape[1], n_heads, width).transpose(0, 2, 1, 3)
    q, k, v = split(proj(x, "Q")), split(proj(kv, "K")), split(proj(kv, "V"))
    s = q @ k.transpose(0, 1, 3, 2) / F32(np.sqrt(width))
    if keep is not None:
        s = np.where(keep[:, None], s, F32(-np.inf))
    ctx = (_softmax(s) @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d)
    return proj(ctx, "O")


def _layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + F32(eps)) + beta


class AttentionBlock:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")

    def attention_sublayer(self, x, memory, weights, h, eps, mask):
        w = {name: np.asarray(a, dtype=F32) for name, a in weights.items()}
        x = np.asarray(x, dtype=F32)
        kv = x if memory is None else np.asarray(memory, dtype=F32)
        keep = None if mask is None else np.asarray(mask, dtype=bool)
        d_k = x.shape[-1] // h
        out = _multi_head(x, kv, w, d_k, keep)
        return _layer_norm(x + out, w["norm.gamma"], w["norm.beta"], eps).astype(F32)


adapter = AttentionBlock()
