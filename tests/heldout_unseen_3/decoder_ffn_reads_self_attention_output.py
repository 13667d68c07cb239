"""§3.1 decoder layer whose feed-forward network reads the output of the first (masked self-attention) sublayer
instead of the second (encoder-decoder attention) one: with y1 = LayerNorm_1(y + SelfAttn(y)) and
y2 = LayerNorm_2(y1 + CrossAttn(y1, memory)), it returns LayerNorm_3(y2 + FFN(y1)), where the paper's third
sublayer is LayerNorm_3(y2 + FFN(y2)) (each sublayer's input is the previous sublayer's output). The residual of
the third sublayer is right (y2); only the FFN's input is the stale variable, so the FFN never sees the source.

Style: torch.nn.functional closures over the layer's weights (``F.linear``, ``F.layer_norm``,
``F.scaled_dot_product_attention`` with a boolean keep mask), float32; decoder_layer only.
"""

import torch
import torch.nn.functional as F

from conformance import Conventions


def _closures(w, h, eps):
    def attention(pre, x, mem, keep):
        B, Lq, d = x.shape

        def lin(t, n):
            return F.linear(t, w[f"{pre}.W_{n}"].T, w.get(f"{pre}.b_{n}"))

        def heads(t):
            return t.reshape(B, t.shape[1], h, d // h).transpose(1, 2)

        has = keep.any(-1, keepdim=True)  # (B, Lq, 1)
        safe = keep | ~has
        ctx = F.scaled_dot_product_attention(heads(lin(x, "Q")), heads(lin(mem, "K")), heads(lin(mem, "V")),
                                             attn_mask=safe[:, None])
        ctx = torch.where(has[:, None], ctx, 0.0)
        return lin(ctx.transpose(1, 2).reshape(B, Lq, d), "O")

    def norm(i, x):
        return F.layer_norm(x, x.shape[-1:], w[f"norm{i}.gamma"], w[f"norm{i}.beta"], eps)

    def ffn(x):
        return F.linear(F.relu(F.linear(x, w["ffn.W1"].T, w["ffn.b1"])), w["ffn.W2"].T, w["ffn.b2"])

    return attention, norm, ffn


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch.nn.functional")

    @torch.no_grad()
    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        w = {k: torch.from_numpy(v) for k, v in weights.items()}
        attention, norm, ffn = _closures(w, int(h), float(eps))
        y, memory = torch.from_numpy(y), torch.from_numpy(memory)
        tgt, src = torch.from_numpy(tgt_mask), torch.from_numpy(src_mask)
        T, S = y.shape[1], memory.shape[1]
        self_keep = torch.ones(T, T, dtype=torch.bool).tril()[None] & tgt[:, None, :]
        cross_keep = src[:, None, :].expand(-1, T, S)
        y1 = norm(1, y + attention("self_attn", y, y, self_keep))
        y2 = norm(2, y1 + attention("cross_attn", y1, memory, cross_keep))
        return norm(3, y2 + ffn(y1)).numpy()


adapter = Adapter()
