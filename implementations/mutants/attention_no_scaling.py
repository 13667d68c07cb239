"""Attention scores not scaled: softmax(Q K^T) V, without the 1/sqrt(d_k) factor.

Violates §3.2.1: "We suspect that for large values of d_k, the dot products grow large in magnitude,
pushing the softmax function into regions where it has extremely small gradients. To counteract
this effect, we scale the dot products by 1/sqrt(d_k)." The softmax saturates as d_k grows; every
comparison with the reference that runs attention catches it, and the attention checks name the cause.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("attention_no_scaling", scale=lambda q: 1.0)

CAUGHT_BY = {
    "attention_matches_formula",
    "base_size_forward_matches_golden",
    "cross_attention_matches_reference",
    "decode_matches_reference",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "multi_head_attention_matches_reference_at_base_size",
    "self_attention_matches_reference",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "self_attention_matches_reference": "(mutant:attention_no_scaling), confirmed on a second",
    "encode_matches_reference": "first divergence: encoder.0 (self-attention sublayer suspected)",
}
