"""§3.2.2 multi-head attention whose four projections are unpacked from the weights in *sorted* key order: the code
reads ``W_Q, W_K, W_V, W_O = (w[k] for k in sorted(w) if k.startswith("W_"))`` (and the biases likewise), but sorted
order is W_K, W_O, W_Q, W_V, so the queries are projected with W_K (b_K), the keys with W_O (b_O), the values with
W_Q (b_Q) and the concatenated heads with W_V (b_V), where the paper projects with W^Q, W^K, W^V and W^O
respectively. The heads (split by reshape and transpose), the scale 1/sqrt(d_k), the mask, the softmax over the keys
and the concatenation are right.

Style: NumPy in float32 (``reshape`` + ``transpose``, ``@``), *additive* masks (0 / -inf) added to the scores;
multi_head_attention only.
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


def _softmax(s):
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
    z = e.sum(axis=-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class SortedMHA:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float32", framework="numpy")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {name: np.asarray(a, dtype=F32) for name, a in weights.items()}
        W_Q, W_K, W_V, W_O = (w[k] for k in sorted(w) if k.startswith("W_"))
        biases = [w[k] for k in sorted(w) if k.startswith("b_")] or [F32(0)] * 4
        b_Q, b_K, b_V, b_O = biases

        query, key, value = (np.asarray(a, dtype=F32) for a in (query, key, value))
        B, Lq, d = query.shape
        dk = d // h
        split = lambda x: x.reshape(B, x.shape[1], h, dk).transpose(0, 2, 1, 3)
        q, k, v = split(query @ W_Q + b_Q), split(key @ W_K + b_K), split(value @ W_V + b_V)
        scores = q @ k.transpose(0, 1, 3, 2) / F32(np.sqrt(dk))
        if mask is not None:
            scores = scores + np.asarray(mask, dtype=F32)[:, None]
        attn = _softmax(scores)
        ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d)
        return ctx @ W_O + b_O, attn


adapter = SortedMHA()
