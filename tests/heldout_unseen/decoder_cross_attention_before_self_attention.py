"""§3.1 decoder layer that runs its two attention sublayers in the wrong order: the encoder-decoder attention first,
on the layer's input, then the masked self-attention on its result, then the FFN:
y1 = LayerNorm_2(y + CrossAttn(y, memory)), y2 = LayerNorm_1(y1 + SelfAttn(y1)), out = LayerNorm_3(y2 + FFN(y2)),
where the paper's decoder layer inserts the encoder-decoder attention *after* the masked self-attention:
y1 = LayerNorm_1(y + SelfAttn(y)), y2 = LayerNorm_2(y1 + CrossAttn(y1, memory)). Each sublayer keeps its own
weights and LayerNorm; only the order is swapped.

Style: torch.nn.Module classes with a registry of sublayers run in a listed order (``ORDER``), float32;
decoder_layer only.
"""

import math

import numpy as np
import torch
from torch import nn

from conformance import Conventions

ORDER = ("cross_attn", "self_attn", "ffn")  # the bug: the paper's order is self_attn, cross_attn, ffn
NORM_OF = {"self_attn": "norm1", "cross_attn": "norm2", "ffn": "norm3"}


class Attention(nn.Module):
    def __init__(self, w, h):
        super().__init__()
        self.w, self.h = w, h

    def forward(self, x, kv, keep):
        w, h = self.w, self.h
        B, Lq, d = x.shape
        Lk = kv.shape[1]

        def proj(t, m, L):
            y = t @ w["W_" + m]
            y = y + w["b_" + m] if "b_" + m in w else y
            return y.view(B, L, h, d // h).transpose(1, 2)

        q, k, v = proj(x, "Q", Lq), proj(kv, "K", Lk), proj(kv, "V", Lk)
        s = (q @ k.transpose(-1, -2) / math.sqrt(d // h)).masked_fill(~keep[:, None], float("-inf"))
        out = torch.nan_to_num(torch.softmax(s, -1), nan=0.0) @ v
        out = out.transpose(1, 2).reshape(B, Lq, d) @ w["W_O"]
        return out + w["b_O"] if "b_O" in w else out


class DecoderLayer(nn.Module):
    def __init__(self, weights, h, eps):
        super().__init__()
        t = {k: torch.as_tensor(np.asarray(v, dtype=np.float32)) for k, v in weights.items()}
        sub = lambda p: {k[len(p) + 1:]: v for k, v in t.items() if k.startswith(p + ".")}  # noqa: E731
        self.attn = nn.ModuleDict({n: Attention(sub(n), h) for n in ("self_attn", "cross_attn")})
        self.f, self.eps = sub("ffn"), eps
        self.norms = {n: (t[n + ".gamma"], t[n + ".beta"]) for n in ("norm1", "norm2", "norm3")}

    def norm(self, x, name):
        gamma, beta = self.norms[name]
        return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, self.eps)

    def run(self, name, y, memory, self_keep, cross_keep):
        if name == "self_attn":
            return self.attn[name](y, y, self_keep)
        if name == "cross_attn":
            return self.attn[name](y, memory, cross_keep)
        f = self.f
        return torch.relu(y @ f["W1"] + f["b1"]) @ f["W2"] + f["b2"]

    def forward(self, y, memory, tgt_keep, src_keep):
        T, S = y.shape[1], memory.shape[1]
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        self_keep = causal[None] & tgt_keep[:, None, :]
        cross_keep = src_keep[:, None, :].expand(-1, T, S)
        for name in ORDER:
            y = self.norm(y + self.run(name, y, memory, self_keep, cross_keep), NORM_OF[name])
        return y


class ModuleAdapter:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch (nn.Module)")

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        layer = DecoderLayer(weights, int(h), float(eps)).eval()
        f = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32))  # noqa: E731
        b = lambda a: torch.as_tensor(np.asarray(a, dtype=bool))  # noqa: E731
        return layer(f(y), f(memory), b(tgt_mask), b(src_mask)).numpy()


adapter = ModuleAdapter()
