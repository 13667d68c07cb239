"""§3.1/§3.2.3 decoder layer whose encoder-decoder attention takes its queries (and its residual) from the layer's
input y instead of the output of the masked self-attention sublayer: LayerNorm(y + CrossAttn(y, memory)), so the
self-attention sublayer's result is thrown away (a variable swapped for another of the same shape).
Class-based NumPy module tree."""

import numpy as np
from _numpy_parts import CONVENTIONS, causal, encoder_layer, ffn, layer_norm, mha, sub


class Norm:
    def __init__(self, w, eps):
        self.g, self.b, self.eps = w["gamma"], w["beta"], eps

    def __call__(self, x):
        return layer_norm(x, self.g, self.b, self.eps)


class Attention:
    def __init__(self, w, h):
        self.w, self.h = w, h

    def __call__(self, q, kv, keep):
        return mha(q, kv, kv, self.w, self.h, keep)[0]


class DecoderBlock:
    def __init__(self, w, h, eps):
        self.self_attn, self.cross_attn = Attention(sub(w, "self_attn"), h), Attention(sub(w, "cross_attn"), h)
        self.norms = [Norm(sub(w, f"norm{i}"), eps) for i in (1, 2, 3)]
        self.ffn_w = sub(w, "ffn")

    def __call__(self, y, memory, tgt_keep, src_keep):
        T = y.shape[1]
        after_self = self.norms[0](y + self.self_attn(y, y, causal(T)[None] & tgt_keep[:, None, :]))  # noqa: F841 - the bug: computed, then not used
        cross_keep = np.broadcast_to(src_keep[:, None, :], (y.shape[0], T, memory.shape[1]))
        after_cross = self.norms[1](y + self.cross_attn(y, memory, cross_keep))  # the bug: y, not after_self
        return self.norms[2](after_cross + ffn(after_cross, self.ffn_w))


class Adapter:
    conventions = CONVENTIONS

    def encoder_layer(self, x, weights, h, eps, src_mask):
        return encoder_layer(x, weights, h, eps, src_mask)

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        return DecoderBlock(weights, h, eps)(y, memory, tgt_mask, src_mask)


adapter = Adapter()
