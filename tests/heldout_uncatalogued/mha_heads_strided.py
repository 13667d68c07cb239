"""§3.2.2 multi-head attention whose head split reshapes (B, L, d_model) to (B, L, d_k, h) and moves the last axis
forward: head i takes the strided columns i, i+h, i+2h, ... of XW_Q (and the merge puts them back the same way),
where the paper's head i is the contiguous block of columns [i*d_k, (i+1)*d_k) (heads split in the wrong order).
torch.nn.functional code."""

import math

import torch
import torch.nn.functional as F

from conformance import Conventions


class Adapter:
    conventions = Conventions(mask="keep", dtype="float64", framework="torch")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        W = {n: torch.from_numpy(a) for n, a in weights.items()}
        B, Lq, d = query.shape
        dk = d // h

        def split(x, n):
            y = F.linear(torch.from_numpy(x), W[f"W_{n}"].T, W.get(f"b_{n}"))
            return y.view(B, -1, dk, h).permute(0, 3, 1, 2)  # the bug: (dk, h) instead of (h, dk)

        q, k, v = split(query, "Q"), split(key, "K"), split(value, "V")
        scores = q @ k.transpose(-1, -2) / math.sqrt(dk)
        if mask is not None:
            scores = scores.masked_fill(~torch.from_numpy(mask).unsqueeze(1), float("-inf"))
        p = torch.nan_to_num(scores.softmax(-1))
        out = (p @ v).permute(0, 2, 3, 1).reshape(B, Lq, d)
        return F.linear(out, W["W_O"].T, W.get("b_O")).numpy(), p.numpy()


adapter = Adapter()
