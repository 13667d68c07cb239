"""§3.2.3 encoder layer whose padding mask is inverted with ``~`` on an *integer* 0/1 mask: the code takes the mask
as a tokenizer's integer ``attention_mask`` (1 = token, 0 = padding) and computes the blocked keys as
``~attention_mask``, which on integers is the bitwise NOT (~1 = -2, ~0 = -1), not the logical one: both values are
non-zero, so ``np.where(blocked, -inf, scores)`` hides every key, padding or not. Every query's weights are then 0
(the softmax of an all-hidden row is taken as 0), the self-attention sublayer contributes only its output bias
(0 without biases): the first sublayer's output is LayerNorm(x + b_O), where the paper hides only the padding keys
(keys j with no token) and every query reads the sentence's tokens. The projections, the scale, the FFN and both
Add & Norm steps are right.

Style: NumPy in float32, an integer attention_mask as Hugging Face tokenizers return it, heads by reshape and
transpose, ``np.einsum`` for the scores; keep masks at the boundary; encoder_layer only.
"""

import numpy as np

from conformance import Conventions

F32 = np.float32


def _softmax(s):
    top = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, F32(0)))
    z = e.sum(-1, keepdims=True)
    return np.divide(e, z, out=np.zeros_like(e), where=z > 0)


def _layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + F32(eps)) + beta


class EncoderBlock:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy (einsum)")

    def _self_attention(self, x, w, h, attention_mask):
        B, S, d = x.shape
        dk = d // h

        def proj(n):
            y = x @ w[f"self_attn.W_{n}"]
            return y + w[f"self_attn.b_{n}"] if f"self_attn.b_{n}" in w else y

        split = lambda t: t.reshape(B, S, h, dk).transpose(0, 2, 1, 3)
        q, k, v = split(proj("Q")), split(proj("K")), split(proj("V"))
        scores = np.einsum("bhqc,bhkc->bhqk", q, k) / F32(np.sqrt(dk))
        blocked = ~attention_mask[:, None, None, :]  # the padding keys
        scores = np.where(blocked, F32(-np.inf), scores)
        ctx = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(B, S, d)
        out = ctx @ w["self_attn.W_O"]
        return out + w["self_attn.b_O"] if "self_attn.b_O" in w else out

    def encoder_layer(self, x, weights, h, eps, src_mask):
        w = {name: np.asarray(a, dtype=F32) for name, a in weights.items()}
        x = np.asarray(x, dtype=F32)
        attention_mask = np.asarray(src_mask).astype(np.int64)  # 1 = token, 0 = padding
        x1 = _layer_norm(x + self._self_attention(x, w, h, attention_mask), w["norm1.gamma"], w["norm1.beta"], eps)
        f = np.maximum(x1 @ w["ffn.W1"] + w["ffn.b1"], F32(0)) @ w["ffn.W2"] + w["ffn.b2"]
        return _layer_norm(x1 + f, w["norm2.gamma"], w["norm2.beta"], eps).astype(F32)


adapter = EncoderBlock()
