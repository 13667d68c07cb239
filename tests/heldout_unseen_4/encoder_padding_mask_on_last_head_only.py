"""§3.2.3 encoder layer that applies the source padding mask to the last head only: the loop over the heads
collects each head's scores Q_i K_i^T / sqrt(d_k) in a list, and the mask is added after the loop (an indentation
slip), ``s += mask`` on the variable the loop left behind, which is the last head's array: heads 0 .. h-2 attend to
the padded source positions, head h-1 does not, where the paper hides the padding keys from every head. With h = 1,
or without padding, it is right. The projections, the scale, the softmax, the concatenation, W_O, both Add & Norm
steps and the FFN are right.

Style: NumPy with a Python loop over the heads (each head a block of columns), an additive mask built from the keep
mask, float32; encoder_layer only.
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


def _softmax(s):
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


def _norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + F32(eps)) + beta


class LoopEncoderLayer:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy (head loop)")

    def _self_attention(self, x, w, h, keep):
        d = x.shape[-1]
        dk = d // h
        lin = lambda n: x @ w[f"self_attn.W_{n}"] + w.get(f"self_attn.b_{n}", F32(0))
        q, k, v = lin("Q"), lin("K"), lin("V")
        additive = np.where(keep[:, None, :], F32(0), F32(-np.inf)).astype(F32)  # (B, 1, S)
        scores = []
        for i in range(h):
            cols = slice(i * dk, (i + 1) * dk)
            s = q[..., cols] @ k[..., cols].transpose(0, 2, 1) / F32(np.sqrt(dk))
            scores.append(s)
        s += additive
        heads = [_softmax(s_i) @ v[..., i * dk:(i + 1) * dk] for i, s_i in enumerate(scores)]
        return np.concatenate(heads, axis=-1) @ w["self_attn.W_O"] + w.get("self_attn.b_O", F32(0))

    def encoder_layer(self, x, weights, h, eps, src_mask):
        w = {k: np.asarray(v, dtype=F32) for k, v in weights.items()}
        x = np.asarray(x, dtype=F32)
        keep = np.asarray(src_mask, dtype=bool)
        x1 = _norm(x + self._self_attention(x, w, h, keep), w["norm1.gamma"], w["norm1.beta"], eps)
        f = np.maximum(x1 @ w["ffn.W1"] + w["ffn.b1"], F32(0)) @ w["ffn.W2"] + w["ffn.b2"]
        return _norm(x1 + f, w["norm2.gamma"], w["norm2.beta"], eps).astype(F32)


adapter = LoopEncoderLayer()
