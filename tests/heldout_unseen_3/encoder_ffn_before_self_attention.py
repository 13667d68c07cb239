"""§3.1 encoder layer that runs its two sublayers in the wrong order: the position-wise FFN first, then the
multi-head self-attention: z = LayerNorm_2(x + FFN(x)), out = LayerNorm_1(z + SelfAttn(z)) (each sublayer keeps
its own weights and its own LayerNorm, only the order is swapped), where the paper's encoder layer has the
multi-head self-attention mechanism as its first sublayer and the position-wise feed-forward network as its second:
z = LayerNorm_1(x + SelfAttn(x)), out = LayerNorm_2(z + FFN(z)). The attention (with its padding mask), the FFN
and the post-norm residual form are right.

Style: NumPy with ``dataclass`` weight records (one per sublayer, built from the canonical dict), blocked masks
(True = hidden), float32; encoder_layer only.
"""

from dataclasses import dataclass

import numpy as np

from conformance import Conventions

F = np.float32


@dataclass
class NormW:
    gamma: np.ndarray
    beta: np.ndarray
    eps: float

    def __call__(self, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return self.gamma * (x - mu) / np.sqrt(var + F(self.eps)) + self.beta


@dataclass
class AttnW:
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b_Q: np.ndarray | float = 0.0
    b_K: np.ndarray | float = 0.0
    b_V: np.ndarray | float = 0.0
    b_O: np.ndarray | float = 0.0
    h: int = 1

    def __call__(self, x, blocked):
        B, L, d = x.shape
        dk = d // self.h

        def split(t):
            return t.reshape(B, L, self.h, dk).transpose(0, 2, 1, 3)

        q, k, v = split(x @ self.W_Q + self.b_Q), split(x @ self.W_K + self.b_K), split(x @ self.W_V + self.b_V)
        s = q @ k.transpose(0, 1, 3, 2) / F(np.sqrt(dk))
        hidden = blocked[:, None, None, :]
        s = np.where(hidden, -np.inf, s)
        top = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(top), top, F(0)))
        z = e.sum(-1, keepdims=True)
        p = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
        return (p @ v).transpose(0, 2, 1, 3).reshape(B, L, d) @ self.W_O + self.b_O


@dataclass
class FfnW:
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray

    def __call__(self, x):
        return np.maximum(x @ self.W1 + self.b1, F(0)) @ self.W2 + self.b2


def _sub(weights, prefix):
    return {k[len(prefix) + 1:]: v for k, v in weights.items() if k.startswith(prefix + ".")}


class Adapter:
    conventions = Conventions(mask="blocked", batch_first=True, dtype="float32", framework="numpy (dataclasses)")

    def encoder_layer(self, x, weights, h, eps, src_mask):
        attn = AttnW(**_sub(weights, "self_attn"), h=int(h))
        ffn = FfnW(**_sub(weights, "ffn"))
        norm1, norm2 = NormW(**_sub(weights, "norm1"), eps=eps), NormW(**_sub(weights, "norm2"), eps=eps)
        z = norm2(x + ffn(x))
        return norm1(z + attn(z, src_mask)).astype(F)


adapter = Adapter()
