"""§3.2.3 decoder self-attention whose future mask is np.tril(ones, k=1): each position may attend to itself, the
past AND the next position (one future token leaks), where the paper masks every position j > i (k=0).
Decoder layer written as plain NumPy functions."""

import numpy as np
from _numpy_parts import CONVENTIONS, encoder_layer, ffn, layer_norm, mha, sub


class Adapter:
    conventions = CONVENTIONS

    def encoder_layer(self, x, weights, h, eps, src_mask):
        return encoder_layer(x, weights, h, eps, src_mask)

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        T = y.shape[1]
        future = np.tril(np.ones((T, T), dtype=bool), k=1)  # the bug: k=1 lets position i see i+1
        self_keep = future[None] & tgt_mask[:, None, :]
        cross_keep = np.repeat(src_mask[:, None, :], T, axis=1)
        a = layer_norm(y + mha(y, y, y, sub(weights, "self_attn"), h, self_keep)[0],
                       weights["norm1.gamma"], weights["norm1.beta"], eps)
        b = layer_norm(a + mha(a, memory, memory, sub(weights, "cross_attn"), h, cross_keep)[0],
                       weights["norm2.gamma"], weights["norm2.beta"], eps)
        return layer_norm(b + ffn(b, sub(weights, "ffn")), weights["norm3.gamma"], weights["norm3.beta"], eps)


adapter = Adapter()
