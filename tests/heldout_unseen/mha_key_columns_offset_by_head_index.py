"""§3.2.2 multi-head attention whose loop over the heads slices the key projection at the head's index instead
of at its block: head i's keys use the columns i .. i+d_k-1 of W_K (and of b_K), ``W_K[:, i:i + d_k]``, where the
paper's head i uses the block of columns i*d_k .. (i+1)*d_k - 1 (the queries and the values take the right block).
Head 0 is right; from head 1 on the keys are projected with overlapping, shifted columns.

Style: NumPy with a Python loop over the heads and explicit column slices, float64; multi_head_attention only.
"""

import numpy as np

from conformance import Conventions


def _softmax_rows(s):
    top = np.max(np.where(np.isneginf(s), -np.inf, s), axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class HeadLoop:
    conventions = Conventions(mask="keep", dtype="float64", framework="numpy (loop over heads)")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        query, key, value = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
        w = {n: np.asarray(a, dtype=np.float64) for n, a in weights.items()}
        d = w["W_Q"].shape[0]
        h = int(h)
        d_k = d // h
        zero = np.zeros(d)
        heads, maps = [], []
        for i in range(h):
            block = slice(i * d_k, (i + 1) * d_k)
            shifted = slice(i, i + d_k)  # the bug: the head's index, not its block, for the keys
            q = query @ w["W_Q"][:, block] + w.get("b_Q", zero)[block]
            k = key @ w["W_K"][:, shifted] + w.get("b_K", zero)[shifted]
            v = value @ w["W_V"][:, block] + w.get("b_V", zero)[block]
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
            if mask is not None:
                s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
            p = _softmax_rows(s)
            heads.append(p @ v)
            maps.append(p)
        out = np.concatenate(heads, axis=-1) @ w["W_O"] + w.get("b_O", zero)
        return out, np.stack(maps, axis=1)


adapter = HeadLoop()
