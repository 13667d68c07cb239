"""§3.2.3 decoder layer whose causal mask is a *float* 0/1 matrix, ``torch.triu(torch.ones(T, T), diagonal=1)``,
meant as a boolean "blocked" mask but passed on as a float ``attn_mask``, which
``F.scaled_dot_product_attention`` *adds* to the scores: every future key's score gets + 1 instead of -inf, so each
target position reads the subsequent positions (with weight e^1 times what they would have unmasked), where the
paper masks out (sets to -inf) every key j > i in the decoder's self-attention. The target padding mask (an
additive 0 / -inf float mask, added to the causal one), the encoder-decoder attention with its source padding mask,
the FFN, the three Add & Norm steps and the attention formula itself are right.

Style: torch functional code around ``F.scaled_dot_product_attention`` (float masks added to the scores), canonical
x @ W matrices used as they are, keep masks at the boundary, float64; decoder_layer only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions

DT = torch.float64


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def padding_bias(keep):
    """(B, L) keep -> (B, 1, 1, L): 0 where a key may be read, -inf on padding."""
    keep = torch.as_tensor(np.asarray(keep, dtype=bool))
    return torch.zeros(keep.shape, dtype=DT).masked_fill(~keep, float("-inf"))[:, None, None, :]


def future_mask(T):
    return torch.triu(torch.ones(T, T, dtype=DT), diagonal=1)  # the positions each query may not see


def mha(w, prefix, xq, xkv, bias, h):
    B, Lq, d = xq.shape

    def proj(x, n):
        y = x @ w[f"{prefix}W_{n}"]
        b = w.get(f"{prefix}b_{n}")
        return y if b is None else y + b

    def split(x):
        return x.view(B, x.shape[1], h, d // h).transpose(1, 2)

    q, k, v = split(proj(xq, "Q")), split(proj(xkv, "K")), split(proj(xkv, "V"))
    ctx = torch.nan_to_num(F.scaled_dot_product_attention(q, k, v, attn_mask=bias), nan=0.0)
    return proj(ctx.transpose(1, 2).reshape(B, Lq, d), "O")


def add_norm(w, prefix, x, sub, eps):
    return F.layer_norm(x + sub, (x.shape[-1],), w[f"{prefix}.gamma"], w[f"{prefix}.beta"], eps)


def ffn(w, x):
    return F.relu(x @ w["ffn.W1"] + w["ffn.b1"]) @ w["ffn.W2"] + w["ffn.b2"]


class FunctionalDecoder:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch (functional, SDPA)")

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        w = {name: _t(value) for name, value in weights.items()}
        y, memory = _t(y), _t(memory)
        T = y.shape[1]
        self_bias = padding_bias(tgt_mask) + future_mask(T)
        cross_bias = padding_bias(src_mask)
        with torch.no_grad():
            y1 = add_norm(w, "norm1", y, mha(w, "self_attn.", y, y, self_bias, h), eps)
            y2 = add_norm(w, "norm2", y1, mha(w, "cross_attn.", y1, memory, cross_bias, h), eps)
            return add_norm(w, "norm3", y2, ffn(w, y2), eps).numpy()


adapter = FunctionalDecoder()
