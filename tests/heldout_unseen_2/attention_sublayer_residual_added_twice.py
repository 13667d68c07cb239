"""§3.1 attention sublayer that adds its residual twice: it returns x + LayerNorm(x + MultiHead(x, kv, kv)) (the
block's input added once more after the norm, ``x = x + self.norm(x + self.attn(x))``), where the paper's
sublayer output is LayerNorm(x + Sublayer(x)) alone. The attention, the residual inside the norm and the
LayerNorm are right; the output is shifted by x.

Style: NumPy class hierarchy (a ``Layer`` base with weights looked up by prefix, ``MultiHead`` and ``Norm``
subclasses, an ``AddNorm`` wrapper), blocked masks, float64; attention_sublayer only (the code's attention
module holds its residual and norm).
"""

import numpy as np

from conformance import Conventions


class Layer:
    def __init__(self, weights, prefix=""):
        self.weights, self.prefix = weights, prefix

    def w(self, name, default=None):
        return self.weights.get(self.prefix + name, default)


class MultiHead(Layer):
    def __init__(self, weights, h):
        super().__init__(weights)
        self.h = h

    def __call__(self, xq, xkv, blocked):
        B, Lq, d = xq.shape
        d_k = d // self.h

        def proj(x, c):
            y = x @ self.w(f"W_{c}")
            b = self.w(f"b_{c}")
            y = y if b is None else y + b
            return y.reshape(B, -1, self.h, d_k).transpose(0, 2, 1, 3)

        q, k, v = proj(xq, "Q"), proj(xkv, "K"), proj(xkv, "V")
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
        if blocked is not None:
            s = np.where(blocked[:, None], -np.inf, s)
        top = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
        tot = e.sum(-1, keepdims=True)
        p = np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)
        out = (p @ v).transpose(0, 2, 1, 3).reshape(B, Lq, d) @ self.w("W_O")
        b_O = self.w("b_O")
        return out if b_O is None else out + b_O


class Norm(Layer):
    def __init__(self, weights, eps):
        super().__init__(weights, "norm.")
        self.eps = eps

    def __call__(self, x):
        mu = x.mean(-1, keepdims=True)
        var = x.var(-1, keepdims=True)
        return self.w("gamma") * (x - mu) / np.sqrt(var + self.eps) + self.w("beta")


class AddNorm:
    def __init__(self, sublayer, norm):
        self.sublayer, self.norm = sublayer, norm

    def __call__(self, x, *args):
        return x + self.norm(x + self.sublayer(x, *args))


class SublayerAdapter:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float64", framework="numpy")

    def attention_sublayer(self, x, memory, weights, h, eps, mask):
        block = AddNorm(MultiHead(weights, int(h)), Norm(weights, float(eps)))
        return block(x, x if memory is None else memory, mask)


adapter = SublayerAdapter()
