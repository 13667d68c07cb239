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

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "encode_matches_reference",
    "encoder_layer_is_permutation_equivariant",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "encoder_layer_matches_reference": "(mutant:causal_mask_in_encoder), confirmed on a second",
    "encoder_layer_is_permutation_equivariant": "(mutant:causal_mask_in_encoder), confirmed on a second",
}
