"""§3.2.2 multi-head attention whose softmax runs over the head axis: the scores are stacked as (B, h, Lq, Lk) and
the code calls ``F.softmax(scores, dim=1)``, so each weight is normalised across the h heads at the same (query,
key) pair, where each head's attention is softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_k)) over that query's keys (the last
axis). For every (query, key) the h returned weights sum to 1, not each query's row; with h = 1 every visible key
gets weight 1. The projections, the 1/sqrt(d_k) scale, the mask (-inf on hidden keys: weight 0), the concatenation
and W_O are right.

Style: torch functional code (F.linear with the canonical x @ W matrices transposed, F.softmax), boolean keep masks,
float32; multi_head_attention only.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float32))


def _linear(x, weights, n):
    b = weights.get(f"b_{n}")
    return F.linear(x, _t(weights[f"W_{n}"]).T, None if b is None else _t(b))


def multi_head_attention(query, key, value, weights, h, mask):
    query, key, value = _t(query), _t(key), _t(value)
    B, Lq, d = query.shape
    dk = d // h
    split = lambda x: x.reshape(B, x.shape[1], h, dk).permute(0, 2, 1, 3)
    with torch.no_grad():
        q, k, v = split(_linear(query, weights, "Q")), split(_linear(key, weights, "K")), split(_linear(value, weights, "V"))
        scores = torch.einsum("bhqc,bhkc->bhqk", q, k) / math.sqrt(dk)
        if mask is not None:
            keep = torch.as_tensor(np.asarray(mask, dtype=bool))[:, None]
            scores = scores.masked_fill(~keep, float("-inf"))
        attn = torch.nan_to_num(F.softmax(scores, dim=1), nan=0.0)
        ctx = torch.einsum("bhqk,bhkc->bqhc", attn, v).reshape(B, Lq, d)
        return _linear(ctx, weights, "O").numpy(), attn.numpy()


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")
    multi_head_attention = staticmethod(multi_head_attention)


adapter = Adapter()
