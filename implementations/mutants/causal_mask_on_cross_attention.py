"""Causal mask also applied to the cross-attention: target position t reads source positions 0..t only.

Violates §3.2.3: "In 'encoder-decoder attention' layers, the queries come from the previous decoder
layer, and the memory keys and values come from the output of the encoder. This allows every
position in the decoder to attend over all positions in the input sequence." The causal mask belongs
to the decoder's self-attention only.
"""

import torch

from conformance.implementations.mutants._build import LayerSwap, causal_keep
from conformance.implementations.reference.model import DecoderLayer


class CausalCrossDecoderLayer(DecoderLayer):
    def forward(self, y, memory, tgt_keep, src_keep):
        f, (T, S) = self.formulas, (y.shape[1], memory.shape[1])
        cross = torch.ones(T, S, dtype=torch.bool).tril()  # the bug: t reads sources 0..t
        cross = cross & src_keep if src_keep is not None else cross.unsqueeze(0)
        y = f.sublayer(y, lambda y: self.self_attn(y, y, y, causal_keep(T, tgt_keep)), self.norm1, self.dropout)
        y = f.sublayer(y, lambda y: self.cross_attn(y, memory, memory, cross), self.norm2, self.dropout)
        return f.sublayer(y, self.ffn, self.norm3, self.dropout)


class CausalCross(LayerSwap):
    decoder_cls = CausalCrossDecoderLayer


adapter = CausalCross(name="mutant:causal_mask_on_cross_attention")
