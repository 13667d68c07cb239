"""§3.2.1 attention that sums the keys instead of the values: softmax(QK^T / sqrt(d_k)) K where the paper has
softmax(QK^T / sqrt(d_k)) V (a variable swapped for another of the same shape). torch.nn.functional code."""

import math

import torch
import torch.nn.functional as F

from conformance import Conventions


def attend(q, k, v, keep):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    probs = torch.nan_to_num(F.softmax(scores, dim=-1))
    return torch.matmul(probs, k), probs  # the bug: k where v belongs


class Adapter:
    conventions = Conventions(mask="keep", dtype="float64", framework="torch")

    def scaled_dot_product_attention(self, q, k, v, mask):
        keep = None if mask is None else torch.from_numpy(mask)
        out, p = attend(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), keep)
        return out.numpy(), p.numpy()

    def multi_head_attention(self, query, key, value, weights, h, mask):
        W = {n: torch.from_numpy(a) for n, a in weights.items()}
        B, Lq, d = query.shape

        def proj(x, n):
            y = F.linear(torch.from_numpy(x), W[f"W_{n}"].T, W.get(f"b_{n}"))
            return y.view(B, -1, h, d // h).transpose(1, 2)

        keep = None if mask is None else torch.from_numpy(mask).unsqueeze(1)
        out, p = attend(proj(query, "Q"), proj(key, "K"), proj(value, "V"), keep)
        out = out.transpose(1, 2).reshape(B, Lq, d)
        return F.linear(out, W["W_O"].T, W.get("b_O")).numpy(), p.numpy()


adapter = Adapter()
