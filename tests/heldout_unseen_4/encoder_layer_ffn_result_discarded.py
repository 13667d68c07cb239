"""§3.1 encoder layer that computes its feed-forward sublayer and then returns the attention sublayer's output: the
forward ends with ``return x1`` (a stale name after a rename) where ``x2 = LayerNorm_2(x1 + FFN(x1))`` was meant, so
the layer's output is LayerNorm_1(x + MultiHead(x, x, x)) and the FFN, its residual and norm2 have no effect, where
the paper's encoder layer has two sublayers, the second the position-wise FFN: LayerNorm_2(x1 + FFN(x1)). The
self-attention sublayer (with the source padding mask) and its Add & Norm are right.

Style: a torch.nn.Module layer with nn.Linear sub-modules (the canonical x @ W matrices loaded transposed), nn.LayerNorm,
*sequence-first* activations (S, B, d) as torch.nn's default, boolean blocked masks (True = padding), float64;
encoder_layer only.
"""

import math

import numpy as np
import torch
from torch import nn

from conformance import Conventions

DT = torch.float64


class SelfAttention(nn.Module):
    def __init__(self, d, h, bias):
        super().__init__()
        self.h = h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=bias, dtype=DT) for _ in range(4))

    def forward(self, x, blocked):  # x (S, B, d), blocked (B, S)
        S, B, d = x.shape
        dk = d // self.h
        heads = lambda t: t.reshape(S, B * self.h, dk).transpose(0, 1)  # (B*h, S, dk), batch-major
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        s = q @ k.transpose(1, 2) / math.sqrt(dk)
        s = s.view(B, self.h, S, S).masked_fill(blocked[:, None, None, :], float("-inf")).view(B * self.h, S, S)
        p = torch.nan_to_num(torch.softmax(s, -1), nan=0.0)
        return self.o((p @ v).transpose(0, 1).reshape(S, B, d))


class EncoderLayer(nn.Module):
    def __init__(self, d, h, d_ff, eps, bias):
        super().__init__()
        self.attn = SelfAttention(d, h, bias)
        self.norm1 = nn.LayerNorm(d, eps=eps, dtype=DT)
        self.lin1, self.lin2 = nn.Linear(d, d_ff, dtype=DT), nn.Linear(d_ff, d, dtype=DT)
        self.norm2 = nn.LayerNorm(d, eps=eps, dtype=DT)

    def forward(self, x, blocked):
        x1 = self.norm1(x + self.attn(x, blocked))
        x2 = self.norm2(x1 + self.lin2(torch.relu(self.lin1(x1))))
        return x1


def _set(param, value):
    param.data.copy_(torch.as_tensor(np.asarray(value, dtype=np.float64)))


class Adapter:
    conventions = Conventions(mask="blocked", batch_first=False, dtype="float64", framework="torch (nn.Module)")

    def encoder_layer(self, x, weights, h, eps, src_mask):
        d, d_ff = weights["ffn.W1"].shape
        bias = "self_attn.b_Q" in weights
        layer = EncoderLayer(d, h, d_ff, eps, bias).eval()
        for n, lin in zip("QKVO", (layer.attn.q, layer.attn.k, layer.attn.v, layer.attn.o)):
            _set(lin.weight, np.asarray(weights[f"self_attn.W_{n}"]).T)
            if bias:
                _set(lin.bias, weights[f"self_attn.b_{n}"])
        _set(layer.lin1.weight, np.asarray(weights["ffn.W1"]).T), _set(layer.lin1.bias, weights["ffn.b1"])
        _set(layer.lin2.weight, np.asarray(weights["ffn.W2"]).T), _set(layer.lin2.bias, weights["ffn.b2"])
        for name, norm in (("norm1", layer.norm1), ("norm2", layer.norm2)):
            _set(norm.weight, weights[f"{name}.gamma"]), _set(norm.bias, weights[f"{name}.beta"])
        with torch.no_grad():
            x = torch.as_tensor(np.asarray(x, dtype=np.float64))
            blocked = torch.as_tensor(np.asarray(src_mask, dtype=bool))
            return layer(x, blocked).numpy()


adapter = Adapter()
