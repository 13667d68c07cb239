"""§3.1 encoder layer that normalises both sublayers with the first LayerNorm's parameters: the FFN sublayer
computes LayerNorm_1(z + FFN(z)) with norm1.gamma and norm1.beta, where the paper's layer has a LayerNorm of its own
after each sublayer (norm2.gamma, norm2.beta after the FFN); norm2's weights are never read. Right only when the
two norms hold the same values (both at their initial gamma 1, beta 0).

Style: NumPy closures: a factory returns the layer's sublayer functions closed over the weights, float64;
encoder_layer only.
"""

import numpy as np

from conformance import Conventions


def make_norm(gamma, beta, eps):
    def norm(x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return gamma * (x - mu) / np.sqrt(var + eps) + beta
    return norm


def make_attention(w, h):
    def attend(x, keep):
        B, L, d = x.shape
        d_k = d // h

        def heads(m):
            y = x @ w["W_" + m] + w.get("b_" + m, 0.0)
            return y.reshape(B, L, h, d_k).transpose(0, 2, 1, 3)

        q, k, v = heads("Q"), heads("K"), heads("V")
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
        s = np.where(keep[:, None, None, :], s, -np.inf)
        top = s.max(-1, keepdims=True)
        p = np.exp(s - np.where(np.isfinite(top), top, 0.0))
        z = p.sum(-1, keepdims=True)
        p = np.divide(p, z, out=np.zeros_like(p), where=z > 0)
        return (p @ v).transpose(0, 2, 1, 3).reshape(B, L, d) @ w["W_O"] + w.get("b_O", 0.0)
    return attend


def make_ffn(w):
    def ffn(x):
        return np.maximum(0.0, x @ w["W1"] + w["b1"]) @ w["W2"] + w["b2"]
    return ffn


def make_encoder_layer(weights, h, eps):
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    part = lambda prefix: {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}  # noqa: E731
    attend, ffn = make_attention(part("self_attn."), h), make_ffn(part("ffn."))
    norm1 = make_norm(w["norm1.gamma"], w["norm1.beta"], eps)
    norm2 = norm1  # the bug: the FFN sublayer reuses the first LayerNorm (norm2 is never built)

    def layer(x, keep):
        z = norm1(x + attend(x, keep))
        return norm2(z + ffn(z))
    return layer


class Closures:
    conventions = Conventions(mask="keep", dtype="float64", framework="numpy (closures)")

    def encoder_layer(self, x, weights, h, eps, src_mask):
        layer = make_encoder_layer(weights, int(h), float(eps))
        return layer(np.asarray(x, dtype=np.float64), np.asarray(src_mask, dtype=bool))


adapter = Closures()
