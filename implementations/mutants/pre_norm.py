"""Pre-norm x + Sublayer(LayerNorm(x)) instead of the paper's post-norm LayerNorm(x + Sublayer(x)).

Violates §3.1: "the output of each sub-layer is LayerNorm(x + Sublayer(x))". Pre-norm is the choice of
most later models (the lesson's "What changed since 2017"), not the original's.
"""

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("pre_norm", sublayer=lambda x, fn, norm, dropout: x + dropout(fn(norm(x))))

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
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
    "encoder_layer_matches_reference": "(mutant:pre_norm), confirmed on a second",
    "encode_matches_reference": "first divergence: encoder.0",
}
