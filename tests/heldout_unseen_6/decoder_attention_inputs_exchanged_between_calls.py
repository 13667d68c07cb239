"""§3.2.3 decoder layer whose two attention calls have their key/value inputs and masks exchanged: the lines were
written in the other order and reordered by their weight prefixes only, so the first sublayer (``self_attn.*``
weights, norm1) attends from y to the *encoder memory* under the source padding mask, and the second
(``cross_attn.*`` weights, norm2) attends from its input to the *decoder's own states* under the causal and target
padding mask: y1 = LN1(y + MHA_self(y, memory, memory)), y2 = LN2(y1 + MHA_cross(y1, y1, y1)), where the paper's
masked self-attention reads the decoder's positions <= i with the self-attention weights and its encoder-decoder
attention reads the memory with the cross-attention weights. Which queries each sublayer takes, the masks
themselves, the FFN sublayer and the three LayerNorms are right.

Style: torch functional code in float64 (``F.linear`` with the canonical matrices transposed, ``F.layer_norm``,
``torch.einsum``), boolean keep masks, batch-first; decoder_layer only.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


def _mha(w, prefix, xq, xkv, h, keep):
    B, Lq, d = xq.shape
    dk = d // h

    def lin(x, n):
        return F.linear(x, w[f"{prefix}W_{n}"].T, w.get(f"{prefix}b_{n}"))

    split = lambda x: x.view(B, x.shape[1], h, dk).transpose(1, 2)
    q, k, v = split(lin(xq, "Q")), split(lin(xkv, "K")), split(lin(xkv, "V"))
    scores = torch.einsum("bhqc,bhkc->bhqk", q, k) / math.sqrt(dk)
    scores = scores.masked_fill(~keep, float("-inf"))
    p = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    return lin(torch.einsum("bhqk,bhkc->bqhc", p, v).reshape(B, Lq, d), "O")


class FunctionalDecoder:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch (functional)")

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        w = {name: _t(a) for name, a in weights.items()}
        y, memory = _t(y), _t(memory)
        T = y.shape[1]
        tgt_keep = torch.as_tensor(np.asarray(tgt_mask, dtype=bool))
        src_keep = torch.as_tensor(np.asarray(src_mask, dtype=bool))[:, None, None, :]
        self_keep = tgt_keep[:, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril()
        norm = lambda x, n: F.layer_norm(x, (x.shape[-1],), w[f"{n}.gamma"], w[f"{n}.beta"], eps)
        with torch.no_grad():
            y1 = norm(y + _mha(w, "self_attn.", y, memory, h, src_keep), "norm1")
            y2 = norm(y1 + _mha(w, "cross_attn.", y1, y1, h, self_keep), "norm2")
            f = F.linear(F.relu(F.linear(y2, w["ffn.W1"].T, w["ffn.b1"])), w["ffn.W2"].T, w["ffn.b2"])
            return norm(y2 + f, "norm3").numpy()


adapter = FunctionalDecoder()
