"""§3.2.2 multi-head attention in which each head projects only its own d_k-wide slice of the input: head i
computes query[:, :, block_i] W_Q[block_i, block_i] (and likewise for the keys and the values with W_K, W_V), with
block_i = [i d_k, (i + 1) d_k), i.e. it uses the diagonal block of each projection matrix and sees d_k of the
d_model input features, where the paper's head i projects the whole d_model-wide input with
W_i^Q = W_Q[:, block_i] (all rows of its columns). The input is "split into h heads" before the projection instead
of after it: a block-diagonal projection. With h = 1 it is right. The biases of the block, the 1/sqrt(d_k) scale,
the mask, the softmax over the keys, the concatenation and W_O (full width) are right.

Style: NumPy with a Python loop over the heads (slices of columns and rows), additive masks (0 / -inf), float64;
multi_head_attention only.
"""

import numpy as np

from conformance import Conventions


def _softmax(s):
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class SlicedHeads:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy (head loop)")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {name: np.asarray(a, dtype=np.float64) for name, a in weights.items()}
        query, key, value = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
        d = query.shape[-1]
        dk = d // h
        bias = lambda n, cols: w[f"b_{n}"][cols] if f"b_{n}" in w else 0.0
        heads, maps = [], []
        for i in range(h):
            cols = slice(i * dk, (i + 1) * dk)
            q = query[..., cols] @ w["W_Q"][cols, cols] + bias("Q", cols)
            k = key[..., cols] @ w["W_K"][cols, cols] + bias("K", cols)
            v = value[..., cols] @ w["W_V"][cols, cols] + bias("V", cols)
            s = q @ k.transpose(0, 2, 1) / np.sqrt(dk)
            a = _softmax(s if mask is None else s + np.asarray(mask, dtype=np.float64))
            heads.append(a @ v)
            maps.append(a)
        out = np.concatenate(heads, axis=-1) @ w["W_O"] + (w["b_O"] if "b_O" in w else 0.0)
        return out, np.stack(maps, axis=1)


adapter = SlicedHeads()
