"""§3.2.2 multi-head attention that concatenates the heads in reverse order before W_O: the heads are collected
with ``insert(0, head)`` instead of ``append``, so Concat(head_h, ..., head_1) W_O, and head i's output is read by
the rows (h-1-i)*d_k .. (h-i)*d_k - 1 of W_O instead of the rows i*d_k .. (i+1)*d_k - 1. Each head's attention
map is right (and returned in the right order); only the output differs, and only with more than one head.

Style: torch.nn.Module with one small module per head (a ModuleList of heads, each slicing its own columns),
float32; multi_head_attention only.
"""

import math

import numpy as np
import torch
from torch import nn

from conformance import Conventions


class Head(nn.Module):
    def __init__(self, w, cols):
        super().__init__()
        self.w, self.cols = w, cols

    def project(self, x, m):
        y = x @ self.w["W_" + m][:, self.cols]
        return y + self.w["b_" + m][self.cols] if "b_" + m in self.w else y

    def forward(self, query, key, value, keep):
        q, k, v = self.project(query, "Q"), self.project(key, "K"), self.project(value, "V")
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if keep is not None:
            scores = scores.masked_fill(~keep, float("-inf"))
        p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        return p @ v, p


class MultiHeadAttention(nn.Module):
    def __init__(self, w, h):
        super().__init__()
        d = w["W_Q"].shape[0]
        self.w = w
        self.heads = nn.ModuleList(Head(w, slice(i * (d // h), (i + 1) * (d // h))) for i in range(h))

    def forward(self, query, key, value, keep):
        outs, maps = [], []
        for head in self.heads:
            o, p = head(query, key, value, keep)
            outs.insert(0, o)  # the bug: prepended, so the concatenation runs head_h .. head_1
            maps.append(p)
        out = torch.cat(outs, dim=-1) @ self.w["W_O"]
        if "b_O" in self.w:
            out = out + self.w["b_O"]
        return out, torch.stack(maps, dim=1)


class ModuleAdapter:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch (nn.Module per head)")

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, mask):
        w = {n: torch.as_tensor(np.asarray(a, dtype=np.float32)) for n, a in weights.items()}
        t = [torch.as_tensor(np.asarray(a, dtype=np.float32)) for a in (query, key, value)]
        keep = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
        out, maps = MultiHeadAttention(w, int(h))(*t, keep)
        return out.numpy(), maps.numpy()


adapter = ModuleAdapter()
