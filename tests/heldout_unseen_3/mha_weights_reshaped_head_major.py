"""§3.2.2 multi-head attention that returns its attention weights in the wrong layout: the per-head maps are
collected in a list and stacked head-major, ``torch.stack(maps)`` of shape (h, B, Lq, Lk), then
``.reshape(B, h, Lq, Lk)`` (a reshape where a transpose was needed), so the returned map [b, i] is the stack's
flat entry b*h + i: another head's, and from the second sentence on another sentence's, map. The output
Concat(head_1, ..., head_h) W_O is right (it uses the maps before stacking); only the attention weights the part
returns are misplaced. With one sentence or one head nothing shows.

Style: torch with a loop over the heads (``torch.einsum`` per head), additive masks (0 / -inf), float64;
multi_head_attention only.
"""

import math

import torch

from conformance import Conventions


class HeadLoop:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="torch")

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {k: torch.from_numpy(v) for k, v in weights.items()}
        xq, xk, xv = torch.from_numpy(query), torch.from_numpy(key), torch.from_numpy(value)
        add = None if mask is None else torch.from_numpy(mask)
        B, Lq, d = xq.shape
        Lk, dk = xk.shape[1], d // h

        def proj(x, n):
            y = x @ w[f"W_{n}"]
            return y + w[f"b_{n}"] if f"b_{n}" in w else y

        Q, K, V = proj(xq, "Q"), proj(xk, "K"), proj(xv, "V")
        outs, maps = [], []
        for i in range(h):
            c = slice(i * dk, (i + 1) * dk)
            s = torch.einsum("bqc,bkc->bqk", Q[..., c], K[..., c]) / math.sqrt(dk)
            if add is not None:
                s = s + add
            top = s.amax(-1, keepdim=True)
            e = torch.exp(s - torch.where(torch.isfinite(top), top, 0.0))
            z = e.sum(-1, keepdim=True)
            p = torch.where(z > 0, e / z.clamp_min(1e-300), 0.0)
            outs.append(torch.einsum("bqk,bkc->bqc", p, V[..., c]))
            maps.append(p)
        out = proj(torch.cat(outs, dim=-1), "O")
        returned = torch.stack(maps).reshape(B, h, Lq, Lk)
        return out.numpy(), returned.numpy()


adapter = HeadLoop()
