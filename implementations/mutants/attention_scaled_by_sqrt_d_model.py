"""Attention scores divided by sqrt(d_model) instead of sqrt(d_k) of one head.

Violates §3.2.1 and §3.2.2: each head attends with d_k = d_model / h dimensions and its scores are
scaled by 1/sqrt(d_k) ("we scale the dot products by 1/sqrt(d_k)"); a layer written as
``scores / math.sqrt(self.d_model)`` scales by sqrt(h) too much. On a single head (h = 1, or the bare
attention formula, where d_model = d_k) it is right, so only multi-head checks with h > 1 can see it.
"""

import math

from conformance.implementations.mutants._build import with_attention


def inverse_sqrt_d_model(q):  # q (B, h, L, d_k) inside multi-head attention, (..., L, d_k) alone
    h = q.shape[-3] if q.dim() == 4 else 1
    return 1.0 / math.sqrt(h * q.shape[-1])


adapter = with_attention("attention_scaled_by_sqrt_d_model", scale=inverse_sqrt_d_model)

CAUGHT_BY = {
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
