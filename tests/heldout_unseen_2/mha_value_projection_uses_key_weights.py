"""§3.2.2 multi-head attention whose value projection reuses the key projection (a copy-pasted line): the values
are V = value W_K (+ b_K when biases are present), where the paper projects them with their own matrix,
head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V). W_V (and b_V) are never read. The attention weights are right
(queries and keys are projected correctly); only the output differs.

Style: a torch.nn.Module with an nn.ModuleList of four nn.Linear layers (q, k, v, o), weights loaded transposed
from the canonical x @ W orientation, blocked masks, float32; multi_head_attention only.
"""

import math

import torch
from torch import nn

from conformance import Conventions


class HeadsModule(nn.Module):
    def __init__(self, d_model, h, bias):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model, bias=bias) for _ in range(4)])

    def load(self, weights):
        with torch.no_grad():
            for lin, letter in zip(self.linears, "QKVO"):
                lin.weight.copy_(torch.from_numpy(weights[f"W_{letter}"]).T)
                if lin.bias is not None:
                    lin.bias.copy_(torch.from_numpy(weights[f"b_{letter}"]))
        return self

    def forward(self, query, key, value, blocked):
        B, Lq, d = query.shape

        def split(x):
            return x.view(B, -1, self.h, self.d_k).transpose(1, 2)

        q = split(self.linears[0](query))
        k = split(self.linears[1](key))
        v = split(self.linears[1](value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if blocked is not None:
            b = blocked.unsqueeze(1)
            scores = scores.masked_fill(b, float("-inf"))
            empty = b.all(-1, keepdim=True)
            p = torch.softmax(scores.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
        else:
            p = torch.softmax(scores, -1)
        out = (p @ v).transpose(1, 2).reshape(B, Lq, d)
        return self.linears[3](out), p


class ModuleAdapter:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch")

    @torch.no_grad()
    def multi_head_attention(self, query, key, value, weights, h, mask):
        d_model = weights["W_Q"].shape[0]
        module = HeadsModule(d_model, int(h), "b_Q" in weights).load(weights).eval()
        blocked = None if mask is None else torch.from_numpy(mask)
        out, p = module(*(torch.from_numpy(a) for a in (query, key, value)), blocked)
        return out.numpy(), p.numpy()


adapter = ModuleAdapter()
