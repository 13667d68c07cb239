"""§3.2.3 decoder self-attention that applies its causal mask as ``np.tril(scores)``: the scores above the
diagonal (the future keys) are set to 0 instead of -inf, so each position still gives every later position the
weight exp(0) / Z in the softmax and reads the future, where the paper masks out (sets to -inf) all values in the
input of the softmax which correspond to illegal connections, giving the future keys weight 0. The target padding
(added as -inf before the tril), the cross-attention, the FFN and the three post-norm sublayers are right; the last
position, which has no future, is right.

Style: NumPy with a small class per sublayer, additive masks (0 / -inf), float32; decoder_layer only.
"""

import numpy as np

from conformance import Conventions

F = np.float32


def softmax(s):
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, F(0)))
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


class Heads:
    def __init__(self, w, prefix, h, causal=False):
        self.w, self.prefix, self.h, self.causal = w, prefix, h, causal

    def lin(self, x, name):
        out = x @ self.w[f"{self.prefix}.W_{name}"]
        b = self.w.get(f"{self.prefix}.b_{name}")
        return out if b is None else out + b

    def __call__(self, x, mem, additive):
        B, Lq, d = x.shape
        dk = d // self.h
        q = self.lin(x, "Q").reshape(B, Lq, self.h, dk).transpose(0, 2, 1, 3)
        k = self.lin(mem, "K").reshape(B, -1, self.h, dk).transpose(0, 2, 1, 3)
        v = self.lin(mem, "V").reshape(B, -1, self.h, dk).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) / F(np.sqrt(dk)) + additive[:, None, None, :]
        if self.causal:
            s = np.tril(s)  # hide the future
        p = softmax(s)
        return self.lin((p @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d), "O")


class Norm:
    def __init__(self, w, prefix, eps):
        self.g, self.b, self.eps = w[f"{prefix}.gamma"], w[f"{prefix}.beta"], F(eps)

    def __call__(self, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return self.g * (x - mu) / np.sqrt(var + self.eps) + self.b


class Adapter:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float32", framework="numpy")

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        w = weights
        y = Norm(w, "norm1", eps)(y + Heads(w, "self_attn", h, causal=True)(y, y, tgt_mask))
        y = Norm(w, "norm2", eps)(y + Heads(w, "cross_attn", h)(y, memory, src_mask))
        ff = np.maximum(y @ w["ffn.W1"] + w["ffn.b1"], F(0)) @ w["ffn.W2"] + w["ffn.b2"]
        return Norm(w, "norm3", eps)(y + ff).astype(F)


adapter = Adapter()
