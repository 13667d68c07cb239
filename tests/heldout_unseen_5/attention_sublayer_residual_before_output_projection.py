"""§3.1 attention sublayer that adds the residual before the output projection: the attention module returns the
concatenated heads and the sublayer wrapper writes ``norm(out_proj(x + heads))``, so the output is
LayerNorm((x + Concat(head_1, ..., head_h)) W_O + b_O), where the paper's sublayer output is
LayerNorm(x + MultiHead(x, kv, kv)) with MultiHead = Concat(head_1, ..., head_h) W_O (+ b_O): x itself goes through
W_O and the residual path carries x W_O instead of x. The heads (projections, scale, mask, softmax) and the
LayerNorm (mean, biased variance, eps inside the root, gamma, beta) are right.

Style: torch nn.Module pieces (an ``Heads`` module returning the concatenation, a ``Sublayer`` wrapper owning W_O and
the norm), the canonical matrices loaded as plain tensors, boolean keep masks, float32; attention_sublayer only (the
code's attention module holds its residual and norm).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float32))


class Heads(nn.Module):
    def forward(self, x, kv, w, h, keep):
        B, Lq, d = x.shape
        dk = d // h
        lin = lambda t, n: F.linear(t, w[f"W_{n}"].T, w.get(f"b_{n}"))
        split = lambda t: t.view(B, t.shape[1], h, dk).transpose(1, 2)
        q, k, v = split(lin(x, "Q")), split(lin(kv, "K")), split(lin(kv, "V"))
        s = q @ k.transpose(-1, -2) / math.sqrt(dk)
        if keep is not None:
            s = s.masked_fill(~keep[:, None], float("-inf"))
        p = torch.nan_to_num(s.softmax(-1), nan=0.0)
        return (p @ v).transpose(1, 2).reshape(B, Lq, d)  # Concat(head_1, ..., head_h)


class Sublayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = Heads()

    def forward(self, x, kv, w, h, eps, keep):
        heads = self.heads(x, kv, w, h, keep)
        out = F.linear(x + heads, w["W_O"].T, w.get("b_O"))
        return F.layer_norm(out, (x.shape[-1],), w["norm.gamma"], w["norm.beta"], eps)


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (nn.Module)")

    def __init__(self):
        self.sublayer = Sublayer().eval()

    def attention_sublayer(self, x, memory, weights, h, eps, mask):
        w = {name: _t(a) for name, a in weights.items()}
        x = _t(x)
        kv = x if memory is None else _t(memory)
        keep = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
        with torch.no_grad():
            return self.sublayer(x, kv, w, h, eps, keep).numpy()


adapter = Adapter()
