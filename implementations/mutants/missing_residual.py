"""No residual connection: LayerNorm(Sublayer(x)) instead of LayerNorm(x + Sublayer(x)).

Violates §3.1: "We employ a residual connection around each of the two sub-layers, followed by layer
normalization. That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))."
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("missing_residual", sublayer=lambda x, fn, norm, dropout: norm(dropout(fn(x))))

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decoder_output_up_to_t_ignores_later_positions",
    "decoder_position_reads_itself",
    "encode_matches_reference",
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
    "decoder_layer_matches_reference": "(mutant:missing_residual), confirmed on a second",
}
