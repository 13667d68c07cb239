"""Mutant: the causal mask also applied to the cross-attention: target position t reads source positions
0..t only ("Cross-attention can read the full source sentence, not just a source prefix").
"""

import torch
from _mutant import LayerSwap, causal_keep

from conformance.implementations.reference.model import DecoderLayer


class CausalCrossDecoderLayer(DecoderLayer):
    def forward(self, y, memory, tgt_keep, src_keep):
        f, (T, S) = self.formulas, (y.shape[1], memory.shape[1])
        cross = torch.ones(T, S, dtype=torch.bool).tril()
        cross = cross & src_keep if src_keep is not None else cross.unsqueeze(0)
        y = f.sublayer(y, lambda y: self.self_attn(y, y, y, causal_keep(T, tgt_keep)), self.norm1, self.dropout)
        y = f.sublayer(y, lambda y: self.cross_attn(y, memory, memory, cross), self.norm2, self.dropout)
        return f.sublayer(y, self.ffn, self.norm3, self.dropout)


class CausalCross(LayerSwap):
    decoder_cls = CausalCrossDecoderLayer


adapter = CausalCross(name="causal_cross_attention")


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "cross_attention_reads_every_real_source_position",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "decoder_layer_matches_reference": "likely cause: causal mask applied to the cross-attention",
    "decode_matches_reference": "first divergence: decoder.0 (its sublayers agree",
}
