"""§3.2.2 multi-head attention whose per-head projections are lambdas built in a loop and bound late: each head's
projection is ``lambda x, n: x @ W[n][:, cols] + b[n][cols]`` with ``cols`` the loop variable of the head loop, which
Python's closures read when the lambda is *called*, after the loop, so every head uses the last head's columns: head
i = Attention(query W^Q_h, key W^K_h, value W^V_h) with h the last head, for every i, where the paper's head i uses
its own columns i*d_k..(i+1)*d_k of W^Q, W^K and W^V (and b_Q, b_K, b_V). All the returned weight maps equal the
last head's; the concatenation holds h copies of the last head, then W_O (+ b_O). With one head it is right. The
scale 1/sqrt(d_k), the mask, the softmax over the keys and W_O are right.

Style: NumPy in float64, a list of per-head lambdas, a loop over the heads and ``np.concatenate``, boolean keep
masks; multi_head_attention only.
"""

import numpy as np

from conformance import Conventions


def _softmax(s):
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    z = e.sum(axis=-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class HeadLoopAttention:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy (head loop)")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {name: np.asarray(a, dtype=np.float64) for name, a in weights.items()}
        d = w["W_Q"].shape[0]
        dk = d // h
        bias = {n: w.get(f"b_{n}", np.zeros(d)) for n in "QKV"}

        projections = []
        for i in range(h):
            cols = slice(i * dk, (i + 1) * dk)
            projections.append(lambda x, n: x @ w[f"W_{n}"][:, cols] + bias[n][cols])

        query, key, value = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
        heads, maps = [], []
        for proj in projections:
            q, k, v = proj(query, "Q"), proj(key, "K"), proj(value, "V")
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(dk)
            if mask is not None:
                s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
            a = _softmax(s)
            heads.append(a @ v)
            maps.append(a)
        out = np.concatenate(heads, axis=-1) @ w["W_O"]
        if "b_O" in w:
            out = out + w["b_O"]
        return out, np.stack(maps, axis=1)


adapter = HeadLoopAttention()
