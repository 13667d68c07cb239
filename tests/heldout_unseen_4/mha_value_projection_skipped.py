"""§3.2.2 multi-head attention that never projects the values: the value input itself is split into the h heads
(``V = value``; W_V and b_V are received and never read), so head_i = Attention(Q W_i^Q, K W_i^K, V_i) with V_i the
i-th block of d_k columns of the raw value input, where the paper's head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).
The attention weights are right (the queries and keys are projected correctly); only the output differs (right
only when W_V is the identity and b_V is 0).

Style: a NumPy class with one method per step and cached weight lookups, additive masks (0 / -inf), float32;
multi_head_attention only.
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


class Projections:
    def __init__(self, weights):
        self.w = {k: np.asarray(v, dtype=F32) for k, v in weights.items()}

    def __call__(self, x, n):
        y = x @ self.w[f"W_{n}"]
        b = self.w.get(f"b_{n}")
        return y if b is None else y + b


class SplitHeadAttention:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float32", framework="numpy")

    @staticmethod
    def split(x, h):
        B, L, d = x.shape
        return x.reshape(B, L, h, d // h).transpose(0, 2, 1, 3)

    @staticmethod
    def merge(x):
        B, h, L, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, L, h * dk)

    @staticmethod
    def softmax(s):
        top = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
        z = e.sum(-1, keepdims=True)
        return np.divide(e, z, out=np.zeros_like(e), where=z > 0)

    def multi_head_attention(self, query, key, value, weights, h, mask):
        proj = Projections(weights)
        q = self.split(proj(np.asarray(query, F32), "Q"), h)
        k = self.split(proj(np.asarray(key, F32), "K"), h)
        v = self.split(np.asarray(value, F32), h)
        scores = q @ k.transpose(0, 1, 3, 2) / F32(np.sqrt(q.shape[-1]))
        if mask is not None:
            scores = scores + np.asarray(mask, F32)[:, None]
        p = self.softmax(scores).astype(F32)
        return proj(self.merge(p @ v), "O").astype(F32), p


adapter = SplitHeadAttention()
