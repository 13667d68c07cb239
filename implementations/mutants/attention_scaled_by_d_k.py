"""Attention scores divided by d_k instead of sqrt(d_k).

Violates §3.2.1: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, "we scale the dot products by
1/sqrt(d_k)". Dividing by d_k flattens the softmax towards uniform weights as d_k grows; at d_k = 1 the
two agree, so only checks with d_k > 1 can see it.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("attention_scaled_by_d_k", scale=lambda q: 1.0 / q.shape[-1])

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
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
