"""Causal mask in the encoder's self-attention too: source position i reads positions 0..i only.

Violates §3.2.3: "The encoder contains self-attention layers ... Each position in the encoder can
attend to all positions in the previous layer of the encoder." Only the decoder is causal.
"""

from conformance.implementations.mutants._build import LayerSwap
from conformance.implementations.reference.model import EncoderLayer


class CausalEncoderLayer(EncoderLayer):
    def forward(self, x, src_keep):
        causal = self.formulas.causal_mask(x.shape[1])
        return super().forward(x, causal & src_keep if src_keep is not None else causal.unsqueeze(0))


class EncoderCausal(LayerSwap):
    encoder_cls = CausalEncoderLayer


adapter = EncoderCausal(name="mutant:causal_mask_in_encoder")
