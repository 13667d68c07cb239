"""§3.2.2 multi-head attention whose values are projected from the *projected keys*: three lines project the
inputs, ``q = query @ W_Q + b_Q``, ``k = key @ W_K + b_K``, ``v = k @ W_V + b_V``, and the third reads ``k`` (the
line above's result) where ``value`` was meant, so head i's values are (K W^K + b_K) W^V_i (+ b_V) instead of the
paper's V W^V_i: the value input is never read, and the keys' projection is applied before the values'. The queries,
the keys, the scores, the scale 1/sqrt(d_k), the mask, the softmax over the keys (so the returned weights), the
concatenation and W_O are right.

Style: torch functional code in float32 (``torch.matmul`` with the canonical x @ W matrices, ``view`` +
``permute``), boolean *blocked* masks, batch-first; multi_head_attention only.
"""

import math

import numpy as np
import torch

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float32))


class MatmulMHA:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch (functional)")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {name: _t(a) for name, a in weights.items()}
        zero = torch.zeros(())
        b = {n: w.get(f"b_{n}", zero) for n in "QKVO"}
        query, key, value = _t(query), _t(key), _t(value)
        B, Lq, d = query.shape
        dk = d // h
        with torch.no_grad():
            q = torch.matmul(query, w["W_Q"]) + b["Q"]
            k = torch.matmul(key, w["W_K"]) + b["K"]
            v = torch.matmul(k, w["W_V"]) + b["V"]
            heads = lambda x: x.view(B, x.shape[1], h, dk).permute(0, 2, 1, 3)
            q, k, v = heads(q), heads(k), heads(v)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)
            if mask is not None:
                scores = scores.masked_fill(torch.as_tensor(np.asarray(mask, dtype=bool))[:, None], float("-inf"))
            attn = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
            ctx = torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(B, Lq, d)
            return (torch.matmul(ctx, w["W_O"]) + b["O"]).numpy(), attn.numpy()


adapter = MatmulMHA()
