"""Mutant: the cross-attention takes its keys and values from the decoder states instead of the memory
(§3.2.3: "the memory keys and values come from the output of the encoder"); the source is never read.
"""

from _mutant import LayerSwap, causal_keep

from conformance.implementations.reference.model import DecoderLayer


class SelfReadingDecoderLayer(DecoderLayer):
    def forward(self, y, memory, tgt_keep, src_keep):
        f, keep = self.formulas, causal_keep(y.shape[1], tgt_keep)
        y = f.sublayer(y, lambda y: self.self_attn(y, y, y, keep), self.norm1, self.dropout)
        y = f.sublayer(y, lambda y: self.cross_attn(y, y, y, keep), self.norm2, self.dropout)
        return f.sublayer(y, self.ffn, self.norm3, self.dropout)


class CrossOnDecoderStates(LayerSwap):
    decoder_cls = SelfReadingDecoderLayer


adapter = CrossOnDecoderStates(name="cross_attention_on_decoder_states")


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
    "decoder_layer_matches_reference": "likely cause: cross-attention reads the decoder states",
    "logits_match_reference": "first divergence: decoder.0",
}
