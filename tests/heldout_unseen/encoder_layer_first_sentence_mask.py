"""§3.1/§3.2.3 encoder layer that applies the first sentence's padding mask to every sentence of the batch
(``src_mask[0]`` broadcast over the batch, a debugging index left in): sentence b's queries hide the keys that
are padding in sentence 0 and read the keys that are padding in sentence b, where the paper masks each sentence's
own padded keys. Right for a batch of one, or when every sentence has the same length.

Style: torch.nn.Module classes (an encoder block with nn.Linear-free parameters in x @ W orientation), float32;
encoder_layer only.
"""

import math

import numpy as np
import torch
from torch import nn

from conformance import Conventions


class SelfAttention(nn.Module):
    def __init__(self, weights, h):
        super().__init__()
        self.h = h
        self.w = {k: torch.as_tensor(np.asarray(v, dtype=np.float32)) for k, v in weights.items()}

    def forward(self, x, keep):
        B, L, d = x.shape
        w, h = self.w, self.h

        def proj(m):
            y = x @ w["W_" + m]
            return y + w["b_" + m] if "b_" + m in w else y

        q, k, v = (proj(m).view(B, L, h, d // h).transpose(1, 2) for m in "QKV")
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        out = out.transpose(1, 2).reshape(B, L, d) @ w["W_O"]
        return out + w["b_O"] if "b_O" in w else out


class EncoderBlock(nn.Module):
    def __init__(self, weights, h, eps):
        super().__init__()
        t = {k: torch.as_tensor(np.asarray(v, dtype=np.float32)) for k, v in weights.items()}
        self.attn = SelfAttention({k[10:]: v for k, v in weights.items() if k.startswith("self_attn.")}, h)
        d = t["norm1.gamma"].shape[0]
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        with torch.no_grad():
            for i, norm in ((1, self.norm1), (2, self.norm2)):
                norm.weight.copy_(t[f"norm{i}.gamma"])
                norm.bias.copy_(t[f"norm{i}.beta"])
        self.t = t

    def ffn(self, x):
        t = self.t
        return torch.relu(x @ t["ffn.W1"] + t["ffn.b1"]) @ t["ffn.W2"] + t["ffn.b2"]

    def forward(self, x, src_mask):
        keep = src_mask[0].expand_as(src_mask)  # the bug: sentence 0's mask for every sentence
        x = self.norm1(x + self.attn(x, keep))
        return self.norm2(x + self.ffn(x))


class ModuleAdapter:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch (nn.Module)")

    @torch.no_grad()
    def encoder_layer(self, x, weights, h, eps, src_mask):
        block = EncoderBlock(weights, int(h), float(eps)).eval()
        x = torch.as_tensor(np.asarray(x, dtype=np.float32))
        return block(x, torch.as_tensor(np.asarray(src_mask, dtype=bool))).numpy()


adapter = ModuleAdapter()
