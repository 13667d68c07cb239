"""§3.1 encoder layer whose second residual adds the layer's input x instead of the attention sublayer's output z:
LayerNorm(x + FFN(z)) where the paper has LayerNorm(z + FFN(z)), z = LayerNorm(x + Attention(x)) (a variable
swapped for another of the same shape). einsum NumPy, one function per layer."""

import numpy as np
from _numpy_parts import CONVENTIONS, decoder_layer, mha, sub


def norm(t, g, b, eps):
    c = t - t.mean(-1, keepdims=True)
    return g * c / np.sqrt(np.einsum("...d,...d->...", c, c)[..., None] / t.shape[-1] + eps) + b


def encoder_block(x, w, h, eps, keep):
    B, S, _ = x.shape
    mask = np.einsum("bs,t->bts", keep, np.ones(S)).astype(bool)
    z = norm(x + mha(x, x, x, sub(w, "self_attn"), h, mask)[0], w["norm1.gamma"], w["norm1.beta"], eps)
    hidden = np.maximum(np.einsum("bsd,df->bsf", z, w["ffn.W1"]) + w["ffn.b1"], 0)
    f = np.einsum("bsf,fd->bsd", hidden, w["ffn.W2"]) + w["ffn.b2"]
    return norm(x + f, w["norm2.gamma"], w["norm2.beta"], eps)  # the bug: x where z belongs


class Adapter:
    conventions = CONVENTIONS

    def encoder_layer(self, x, weights, h, eps, src_mask):
        return encoder_block(x, weights, h, eps, src_mask)

    def decoder_layer(self, y, memory, weights, h, eps, tgt_mask, src_mask):
        return decoder_layer(y, memory, weights, h, eps, tgt_mask, src_mask)


adapter = Adapter()
