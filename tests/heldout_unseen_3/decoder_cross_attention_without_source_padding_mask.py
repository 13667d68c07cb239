"""§3.2.3 decoder layer whose encoder-decoder attention is called without the source padding mask: the
cross-attention module is called as ``self.cross(y, memory, memory)`` and the ``src_mask`` the layer receives is
never passed on (the ``memory_key_padding_mask`` forgotten), so every target position also attends to the padded
positions of the source, where the paper's encoder-decoder attention, like every attention, prevents attention to
padding: the source's padded keys are hidden. The masked self-attention (causal and target padding), the FFN and
the three post-norm sublayers are right; a source without padding is right.

Style: torch.nn modules (``nn.Linear`` projections loaded from the canonical ``x @ W`` weights, transposed), blocked
masks (True = hidden), float32; decoder_layer only.
"""

import math

import numpy as np
import torch
from torch import nn

from conformance import Conventions


class Attention(nn.Module):
    def __init__(self, d, h, bias):
        super().__init__()
        self.h = h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=bias) for _ in range(4))

    def load(self, w, prefix):
        with torch.no_grad():
            for name, lin in zip("QKVO", (self.q, self.k, self.v, self.o)):
                lin.weight.copy_(torch.from_numpy(w[f"{prefix}.W_{name}"]).T)
                if lin.bias is not None:
                    lin.bias.copy_(torch.from_numpy(w[f"{prefix}.b_{name}"]))

    def forward(self, x, mem, _unused=None, blocked=None):
        B, Lq, d = x.shape
        Lk, dk = mem.shape[1], d // self.h
        q = self.q(x).view(B, Lq, self.h, dk).transpose(1, 2)
        k = self.k(mem).view(B, Lk, self.h, dk).transpose(1, 2)
        v = self.v(mem).view(B, Lk, self.h, dk).transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(dk)
        if blocked is not None:
            b = blocked[:, None]
            s = s.masked_fill(b, float("-inf"))
            empty = b.all(-1, keepdim=True)
            p = torch.softmax(s.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
        else:
            p = torch.softmax(s, -1)
        return self.o((p @ v).transpose(1, 2).reshape(B, Lq, d))


class DecoderLayer(nn.Module):
    def __init__(self, d, h, d_ff, eps, bias):
        super().__init__()
        self.self_attn, self.cross = Attention(d, h, bias), Attention(d, h, bias)
        self.ff1, self.ff2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        self.norms = nn.ModuleList(nn.LayerNorm(d, eps=eps) for _ in range(3))

    def load(self, w):
        self.self_attn.load(w, "self_attn")
        self.cross.load(w, "cross_attn")
        with torch.no_grad():
            self.ff1.weight.copy_(torch.from_numpy(w["ffn.W1"]).T), self.ff1.bias.copy_(torch.from_numpy(w["ffn.b1"]))
            self.ff2.weight.copy_(torch.from_numpy(w["ffn.W2"]).T), self.ff2.bias.copy_(torch.from_numpy(w["ffn.b2"]))
            for i, norm in enumerate(self.norms):
                norm.weight.copy_(torch.from_numpy(w[f"norm{i + 1}.gamma"]))
                norm.bias.copy_(torch.from_numpy(w[f"norm{i + 1}.beta"]))
        return self

    def forward(self, y, memory, tgt_blocked, src_blocked):
        T = y.shape[1]
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        self_blocked = future[None] | tgt_blocked[:, None, :]
        y = self.norms[0](y + self.self_attn(y, y, None, self_blocked))
        y = self.norms[1](y + self.cross(y, memory, memory))
        return self.norms[2](y + self.ff2(torch.relu(self.ff1(y))))


class Adapter:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="torch (nn.Module)")

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        d, d_ff = np.shape(weights["ffn.W1"])
        with torch.random.fork_rng():
            layer = DecoderLayer(d, int(h), d_ff, float(eps), "self_attn.b_Q" in weights).load(weights).eval()
        out = layer(torch.from_numpy(y), torch.from_numpy(memory), torch.from_numpy(tgt_mask),
                    torch.from_numpy(src_mask))
        return out.numpy()


adapter = Adapter()
