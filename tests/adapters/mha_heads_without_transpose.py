"""Mutant: heads split by reshaping (B, L, d_model) straight into (B, h, L, d_k), no transpose (§3.2.2).

Each "head" then holds slices of several positions: head i no longer reads columns [i*d_k:(i+1)*d_k].
"""

from _mutant import with_formulas


def split_heads(x, h):
    B, L, d_model = x.shape
    return x.reshape(B, h, L, d_model // h)


def merge_heads(x):
    B, h, L, d_k = x.shape
    return x.reshape(B, L, h * d_k)


adapter = with_formulas("mha_heads_without_transpose", split_heads=split_heads, merge_heads=merge_heads)


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "batch_equals_rows_run_one_at_a_time",
    "encoder_layer_is_permutation_equivariant",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "padded_query_rows_still_follow_the_formula",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "cross_attention_reads_every_real_source_position",
    "fully_masked_row_gives_zero_weights_and_only_b_O",
    "masking_keys_equals_removing_them",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "self_attention_matches_reference",
    "cross_attention_matches_reference",
    "multi_head_attention_matches_reference_at_base_size",
    "head_i_reads_only_its_own_columns_of_W_Q_and_W_K",
)
MESSAGES = {
    "self_attention_matches_reference": "likely cause: heads split by reshaping",
    "head_i_reads_only_its_own_columns_of_W_Q_and_W_K": "likely cause: heads split by reshaping",
}
