"""Mutant: attention scores not divided by sqrt(d_k) (§3.2.1: softmax(Q K^T / sqrt(d_k)) V).

The softmax saturates as d_k grows; every comparison with the reference that runs attention catches it,
and the multi-head attention checks name the cause.
"""

from _mutant import with_formulas

from conformance.implementations.reference.model import scaled_dot_product_attention


def attention_without_scaling(q, k, v, keep):
    return scaled_dot_product_attention(q * q.shape[-1] ** 0.5, k, v, keep)  # cancels the 1/sqrt(d_k)


adapter = with_formulas("mha_no_scaling", attention=attention_without_scaling)


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "padded_query_rows_still_follow_the_formula",
    "fully_masked_row_gives_zero_weights_and_only_b_O",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "self_attention_matches_reference",
    "cross_attention_matches_reference",
    "multi_head_attention_matches_reference_at_base_size",
)
MESSAGES = {
    "self_attention_matches_reference": "likely cause: no 1/sqrt(d_k) scaling of the scores",
    "encode_matches_reference": "first divergence: encoder.0 (self-attention sublayer suspected)",
}
