"""§3.2.3 decoder layer whose encoder-decoder attention applies the source padding mask to the *values* instead of
the scores: the padded memory positions' value vectors are multiplied by 0 (``v * keep``), and their keys keep their
scores, so the padded positions still take their share of each query's softmax (the weights of the real source
positions are diluted, and the padding contributes a zero vector), where the paper hides the padded keys by setting
their scores to -inf before the softmax (weight 0, the real positions' weights summing to 1). Without source
padding it is right. The masked self-attention (causal and target padding masks on the scores), the projections,
the scale, the FFN and the three Add & Norm steps are right.

Style: torch functional code in float64 (F.linear with the canonical x @ W matrices transposed, F.layer_norm,
einsum), keep masks; decoder_layer only.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def _attend(w, prefix, xq, xkv, h, score_keep=None, value_keep=None):
    B, Lq, d = xq.shape
    dk = d // h

    def lin(x, n):
        return F.linear(x, w[f"{prefix}W_{n}"].T, w.get(f"{prefix}b_{n}"))

    split = lambda x: x.view(B, x.shape[1], h, dk).transpose(1, 2)
    q, k, v = split(lin(xq, "Q")), split(lin(xkv, "K")), split(lin(xkv, "V"))
    scores = torch.einsum("bhqc,bhkc->bhqk", q, k) / math.sqrt(dk)
    if score_keep is not None:
        scores = scores.masked_fill(~score_keep, float("-inf"))
    if value_keep is not None:
        v = v * value_keep[:, None, :, None]  # the padded source positions contribute nothing
    p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    ctx = torch.einsum("bhqk,bhkc->bqhc", p, v).reshape(B, Lq, d)
    return lin(ctx, "O")


class FunctionalDecoderLayer:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch (functional)")

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        w = {name: _t(a) for name, a in weights.items()}
        y, memory = _t(y), _t(memory)
        T = y.shape[1]
        tgt_keep = torch.as_tensor(np.asarray(tgt_mask, dtype=bool))
        src_keep = torch.as_tensor(np.asarray(src_mask, dtype=bool))
        self_keep = tgt_keep[:, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril()
        norm = lambda x, n: F.layer_norm(x, (x.shape[-1],), w[f"{n}.gamma"], w[f"{n}.beta"], eps)
        with torch.no_grad():
            y1 = norm(y + _attend(w, "self_attn.", y, y, h, score_keep=self_keep), "norm1")
            y2 = norm(y1 + _attend(w, "cross_attn.", y1, memory, h, value_keep=src_keep.to(y.dtype)), "norm2")
            f = F.linear(F.relu(F.linear(y2, w["ffn.W1"].T, w["ffn.b1"])), w["ffn.W2"].T, w["ffn.b2"])
            return norm(y2 + f, "norm3").numpy()


adapter = FunctionalDecoderLayer()
