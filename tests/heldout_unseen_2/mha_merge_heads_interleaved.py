"""§3.2.2 multi-head attention whose concatenation interleaves the heads: the per-head outputs (B, h, L, d_k) are
merged with the pattern "b h l d -> b l (d h)" (permute(0, 2, 3, 1)), so column j*h + i of the concatenation holds
component j of head i, where the paper's Concat(head_1, ..., head_h) puts head i in the block of columns
[i*d_k, (i+1)*d_k) that rows [i*d_k, (i+1)*d_k) of W_O read. The split of Q, K, V into heads is right ("b l (h d)
-> b h l d"), so the weights are right; only the output differs, and only with h > 1.

Style: torch functional code with einops-like manual reshapes (view / permute written out, the patterns in
comments), additive masks, float32; multi_head_attention only.
"""

import math

import torch

from conformance import Conventions


def rearrange_in(x, h):
    b, n, hd = x.shape  # "b l (h d) -> b h l d"
    return x.view(b, n, h, hd // h).permute(0, 2, 1, 3)


def rearrange_out(x):
    b, h, n, d = x.shape  # "b h l d -> b l (d h)"
    return x.permute(0, 2, 3, 1).reshape(b, n, d * h)


class ReshapeHeads:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float32", framework="torch")

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {name: torch.from_numpy(a) for name, a in weights.items()}

        def lin(x, letter):
            y = x @ w[f"W_{letter}"]
            return y + w[f"b_{letter}"] if f"b_{letter}" in w else y

        x_q, x_k, x_v = (torch.from_numpy(a) for a in (query, key, value))
        q, k, v = (rearrange_in(lin(x, c), h) for x, c in ((x_q, "Q"), (x_k, "K"), (x_v, "V")))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if mask is not None:
            add = torch.from_numpy(mask)[:, None]
            scores = scores + add
            empty = torch.isinf(add).all(-1, keepdim=True)
            p = torch.softmax(scores.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
        else:
            p = torch.softmax(scores, -1)
        out = lin(rearrange_out(p @ v), "O")
        return out.numpy(), p.numpy()


adapter = ReshapeHeads()
