"""Cross-attention takes its keys and values from the decoder states instead of the memory.

Violates §3.2.3: "the queries come from the previous decoder layer, and the memory keys and values
come from the output of the encoder". Wired to the decoder, the source is never read.
"""

from conformance.implementations.mutants._build import LayerSwap, causal_keep
from conformance.implementations.reference.model import DecoderLayer


class SelfReadingDecoderLayer(DecoderLayer):
    def forward(self, y, memory, tgt_keep, src_keep):
        f, keep = self.formulas, causal_keep(y.shape[1], tgt_keep)
        y = f.sublayer(y, lambda y: self.self_attn(y, y, y, keep), self.norm1, self.dropout)
        y = f.sublayer(y, lambda y: self.cross_attn(y, y, y, keep), self.norm2, self.dropout)  # the bug: y, not memory
        return f.sublayer(y, self.ffn, self.norm3, self.dropout)


class CrossOnDecoderStates(LayerSwap):
    decoder_cls = SelfReadingDecoderLayer


adapter = CrossOnDecoderStates(name="mutant:cross_attention_on_decoder_states")
