"""Attention ignores its mask: every key is read, padding and the future included.

Violates §3.2.1 and §3.2.3: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V, where "M is the mask:
it adds 0 at allowed positions and -inf at forbidden positions" ("Vanilla Transformer"). An attention
function that takes the mask argument and never applies it (a dropped ``masked_fill``, or a fused kernel
called without ``attn_mask``) leaks padding into real positions and the future into the decoder.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class MaskIgnored(NumpyAdapter):
    def mask_scores(self, scores, additive):
        return scores  # the bug: M never added


adapter = MaskIgnored()
