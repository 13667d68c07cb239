"""§3.2.2 multi-head attention that concatenates the heads along the sequence axis: each head's output is
(B, L, d_k), and the code writes ``torch.cat(heads, dim=1)`` (B, h*L, d_k) and then ``.reshape(B, L, d_model)`` to
get the shape back, so row l of the "concatenation" holds h consecutive d_k-chunks of the (head-major) stack:
positions and heads are mixed, where the paper's Concat(head_1, ..., head_h) joins the heads along the feature
axis, position by position (``dim=-1``: row l is head_1[l], ..., head_h[l]). The projections, the per-head
scaled dot-product attention, the returned weights and W_O are right; with one head or one query position nothing
shows.

Style: torch.nn.functional code with a Python loop over the heads, boolean keep masks, float32;
multi_head_attention only.
"""

import math

import torch
import torch.nn.functional as F

from conformance import Conventions


def _t(a):
    return None if a is None else torch.from_numpy(a)


class LoopHeads:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {k: torch.from_numpy(v) for k, v in weights.items()}
        xq, xk, xv, keep = _t(query), _t(key), _t(value), _t(mask)
        B, Lq, d = xq.shape
        dk = d // h

        def lin(x, n):
            return F.linear(x, w[f"W_{n}"].T, w.get(f"b_{n}"))

        Q, K, V = lin(xq, "Q"), lin(xk, "K"), lin(xv, "V")
        heads, maps = [], []
        for i in range(h):
            cols = slice(i * dk, (i + 1) * dk)
            s = Q[..., cols] @ K[..., cols].transpose(1, 2) / math.sqrt(dk)
            if keep is not None:
                s = s.masked_fill(~keep, float("-inf"))
                has = keep.any(-1, keepdim=True)
                p = torch.where(has, F.softmax(s.masked_fill(~has, 0.0), -1), 0.0)
            else:
                p = F.softmax(s, -1)
            heads.append(p @ V[..., cols])
            maps.append(p)
        merged = torch.cat(heads, dim=1).reshape(B, Lq, d)
        return lin(merged, "O").numpy(), torch.stack(maps, dim=1).numpy()


adapter = LoopHeads()
