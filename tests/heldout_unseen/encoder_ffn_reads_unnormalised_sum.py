"""§3.1 encoder layer whose FFN reads the attention sublayer's sum before its LayerNorm: with s = x + Attn(x) and
z = LayerNorm_1(s), it returns LayerNorm_2(z + FFN(s)), where the paper feeds the FFN the sublayer's output
z = LayerNorm(x + Sublayer(x)): LayerNorm_2(z + FFN(z)). The residual is right (z); only the FFN's input is the
un-normalised sum (a variable reused after it was normalised under another name).

Style: torch functional code (F.layer_norm, F.linear, explicit head reshapes), float64; encoder_layer only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def self_attention(x, p, h, keep):
    B, L, d = x.shape

    def proj(m):
        y = F.linear(x, p["self_attn.W_" + m].t(), p.get("self_attn.b_" + m))
        return y.reshape(B, L, h, d // h).permute(0, 2, 1, 3)

    q, k, v = proj("Q"), proj("K"), proj("V")
    s = torch.matmul(q, k.transpose(-1, -2)) / (d // h) ** 0.5
    s = s.masked_fill(~keep[:, None, None, :], float("-inf"))
    a = torch.nan_to_num(F.softmax(s, dim=-1), nan=0.0)
    out = torch.matmul(a, v).permute(0, 2, 1, 3).reshape(B, L, d)
    return F.linear(out, p["self_attn.W_O"].t(), p.get("self_attn.b_O"))


def encoder_layer(x, p, h, eps, keep):
    d = x.shape[-1]
    s = x + self_attention(x, p, h, keep)
    z = F.layer_norm(s, (d,), p["norm1.gamma"], p["norm1.beta"], eps)
    hidden = F.relu(F.linear(s, p["ffn.W1"].t(), p["ffn.b1"]))  # the bug: s (before norm1), not z
    return F.layer_norm(z + F.linear(hidden, p["ffn.W2"].t(), p["ffn.b2"]), (d,), p["norm2.gamma"],
                        p["norm2.beta"], eps)


class Functional:
    conventions = Conventions(mask="keep", dtype="float64", framework="torch (functional, float64)")

    @torch.no_grad()
    def encoder_layer(self, x, weights, h, eps, src_mask):
        p = {n: torch.as_tensor(np.asarray(a, dtype=np.float64)) for n, a in weights.items()}
        x = torch.as_tensor(np.asarray(x, dtype=np.float64))
        keep = torch.as_tensor(np.asarray(src_mask, dtype=bool))
        return encoder_layer(x, p, int(h), float(eps), keep).numpy()


adapter = Functional()
