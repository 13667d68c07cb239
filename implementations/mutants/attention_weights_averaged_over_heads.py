"""Attention weights returned averaged over the heads, (B, Lq, Lk), instead of one map per head.

Violates §3.2.2 as the protocol and the lessons' explorer show it: MultiHead(Q, K, V) has h heads,
each with its own attention map, (B, h, Lq, Lk). ``torch.nn.MultiheadAttention`` averages them by
default (average_attn_weights=True).
"""

from conformance.implementations.reference.adapter import ReferenceAdapter


class AveragedWeights(ReferenceAdapter):
    def multi_head_attention(self, query, key, value, weights, h, mask):
        out, attn = super().multi_head_attention(query, key, value, weights, h, mask)
        return out, attn.mean(axis=1)


adapter = AveragedWeights(name="mutant:attention_weights_averaged_over_heads")
