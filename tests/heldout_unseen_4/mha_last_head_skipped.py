"""§3.2.2 multi-head attention whose loop over the heads stops one head early: ``for i in range(h - 1)`` fills a
context buffer preallocated with zeros, so the last head's block of columns [(h-1) d_k, h d_k) of the concatenation
stays 0 (and its returned weights are 0), where the paper computes all h heads,
MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O. The rows (h-1) d_k .. h d_k - 1 of W_O only ever see zeros;
with h = 1 no head is computed at all and the output is b_O (or 0). Heads 0 .. h-2 and their weights are right.

Style: NumPy with explicit per-head, per-sentence loops and column slices, boolean blocked masks (True = may not
attend), float64; multi_head_attention only.
"""

import numpy as np

from conformance import Conventions


def _softmax_row(s):
    if not np.isfinite(s).any():
        return np.zeros_like(s)
    e = np.exp(s - s[np.isfinite(s)].max())
    return e / e.sum()


class HeadLoop:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float64", framework="numpy (loops)")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
        B, Lq, d = query.shape
        Lk = key.shape[1]
        dk = d // h
        q = query @ w["W_Q"] + w.get("b_Q", 0.0)
        k = key @ w["W_K"] + w.get("b_K", 0.0)
        v = value @ w["W_V"] + w.get("b_V", 0.0)
        context = np.zeros((B, Lq, d))
        maps = np.zeros((B, h, Lq, Lk))
        for i in range(h - 1):
            cols = slice(i * dk, (i + 1) * dk)
            for b in range(B):
                scores = q[b, :, cols] @ k[b, :, cols].T / np.sqrt(dk)
                if mask is not None:
                    scores = np.where(np.asarray(mask[b], dtype=bool), -np.inf, scores)
                p = np.stack([_softmax_row(row) for row in scores])
                maps[b, i] = p
                context[b, :, cols] = p @ v[b, :, cols]
        return context @ w["W_O"] + w.get("b_O", 0.0), maps


adapter = HeadLoop()
