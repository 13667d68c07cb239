"""§3.2.2 multi-head attention whose query and key projections are exchanged by a typo in an order string: the three
projections are made in one generator, ``zip((query, key, value), "KQV")`` where ``"QKV"`` was meant, so the
queries are projected with W_K (and b_K) and the keys with W_Q (and b_Q): head i scores
(query W_i^K)(key W_i^Q)^T / sqrt(d_k) instead of the paper's (query W_i^Q)(key W_i^K)^T / sqrt(d_k). In
self-attention the score maps come out transposed (the weights are the softmax of the transposed scores); in
encoder-decoder attention they differ altogether. The value projection, the scale, the mask, the softmax over the
keys, the concatenation and W_O are right.

Style: torch functional code (F.linear with the canonical x @ W matrices transposed, view + transpose for the heads,
torch.matmul), boolean keep masks, float32; multi_head_attention only.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float32))


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {name: _t(a) for name, a in weights.items()}
        query, key, value = _t(query), _t(key), _t(value)
        B, Lq, d = query.shape
        dk = d // h

        def project(x, n):
            y = F.linear(x, w[f"W_{n}"].T, w.get(f"b_{n}"))
            return y.view(B, x.shape[1], h, dk).transpose(1, 2)

        with torch.no_grad():
            q, k, v = (project(x, n) for x, n in zip((query, key, value), "KQV"))
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dk)
            if mask is not None:
                keep = torch.as_tensor(np.asarray(mask, dtype=bool))[:, None]
                scores = scores.masked_fill(~keep, float("-inf"))
            attn = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
            ctx = torch.matmul(attn, v).transpose(1, 2).reshape(B, Lq, d)
            return F.linear(ctx, w["W_O"].T, w.get("b_O")).numpy(), attn.numpy()


adapter = Adapter()
