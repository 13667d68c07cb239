"""§3.1 decoder layer without its last LayerNorm: the third sublayer returns z + FFN(z) (the residual sum),
never passed through norm3, where the paper's every sublayer, the decoder's position-wise FFN included, outputs
LayerNorm(x + Sublayer(x)). norm3's gamma and beta are received and never read. The masked self-attention, the
encoder-decoder attention and their two Add & Norm steps are right.

Style: torch.nn.Module with nn.ModuleList of sublayers and nn.ModuleDict of norms, sequence-first activations
(batch_first=False: (T, B, d) and (S, B, d)), nn.MultiheadAttention-free attention written out, float32;
decoder_layer only.
"""

import math

import torch
from torch import nn

from conformance import Conventions


class Attend(nn.Module):
    def __init__(self, d, h, bias):
        super().__init__()
        self.h = h
        self.W = nn.ParameterDict({c: nn.Parameter(torch.zeros(d, d)) for c in "QKVO"})
        self.b = nn.ParameterDict({c: nn.Parameter(torch.zeros(d)) for c in "QKVO"}) if bias else None

    def lin(self, x, c):
        y = x @ self.W[c]
        return y if self.b is None else y + self.b[c]

    def forward(self, xq, xkv, keep):  # xq (Lq, B, d), keep (B, Lq, Lk)
        Lq, B, d = xq.shape
        d_k = d // self.h

        def heads(t):
            return t.reshape(t.shape[0], B, self.h, d_k).permute(1, 2, 0, 3)

        q, k, v = heads(self.lin(xq, "Q")), heads(self.lin(xkv, "K")), heads(self.lin(xkv, "V"))
        s = (q @ k.transpose(-1, -2) / math.sqrt(d_k)).masked_fill(~keep[:, None], float("-inf"))
        empty = ~keep[:, None].any(-1, keepdim=True)
        p = torch.softmax(s.masked_fill(empty, 0.0), -1).masked_fill(empty, 0.0)
        return self.lin((p @ v).permute(2, 0, 1, 3).reshape(Lq, B, d), "O")


class DecoderBlock(nn.Module):
    def __init__(self, d, h, d_ff, eps, bias):
        super().__init__()
        self.sublayers = nn.ModuleList([Attend(d, h, bias), Attend(d, h, bias),
                                        nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))])
        self.norms = nn.ModuleDict({f"norm{i}": nn.LayerNorm(d, eps=eps) for i in (1, 2, 3)})

    def load(self, w):
        t = torch.from_numpy
        with torch.no_grad():
            for att, prefix in zip(self.sublayers[:2], ("self_attn", "cross_attn")):
                for c in "QKVO":
                    att.W[c].copy_(t(w[f"{prefix}.W_{c}"]))
                    if att.b is not None:
                        att.b[c].copy_(t(w[f"{prefix}.b_{c}"]))
            ffn = self.sublayers[2]
            ffn[0].weight.copy_(t(w["ffn.W1"]).T)
            ffn[0].bias.copy_(t(w["ffn.b1"]))
            ffn[2].weight.copy_(t(w["ffn.W2"]).T)
            ffn[2].bias.copy_(t(w["ffn.b2"]))
            for name, norm in self.norms.items():
                norm.weight.copy_(t(w[f"{name}.gamma"]))
                norm.bias.copy_(t(w[f"{name}.beta"]))
        return self

    def forward(self, y, memory, self_keep, cross_keep):
        self_attn, cross_attn, ffn = self.sublayers
        y = self.norms["norm1"](y + self_attn(y, y, self_keep))
        y = self.norms["norm2"](y + cross_attn(y, memory, cross_keep))
        return y + ffn(y)


class SequenceFirstDecoder:
    conventions = Conventions(mask="keep", batch_first=False, dtype="float32", framework="torch")

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        d, d_ff = weights["ffn.W1"].shape
        block = DecoderBlock(d, int(h), d_ff, float(eps), "self_attn.b_Q" in weights).load(weights).eval()
        T = y.shape[0]
        tgt, src = torch.from_numpy(tgt_mask), torch.from_numpy(src_mask)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        self_keep = tgt[:, None, :] & causal[None]
        cross_keep = src[:, None, :].expand(-1, T, -1)
        return block(torch.from_numpy(y), torch.from_numpy(memory), self_keep, cross_keep).numpy()


adapter = SequenceFirstDecoder()
