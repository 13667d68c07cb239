"""Heads split by reshaping (B, L, d_model) straight into (B, h, L, d_k), without the transpose.

Violates §3.2.2: head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V) with W_i^Q the i-th d_k columns of the
projection; reshaping without the transpose makes each "head" hold slices of several positions, and
head i no longer reads columns [i*d_k:(i+1)*d_k].
"""

from conformance.implementations.mutants._build import with_formulas


def split_heads(x, h):
    B, L, d_model = x.shape
    return x.reshape(B, h, L, d_model // h)  # the bug: no view(B, L, h, d_k).transpose(1, 2)


def merge_heads(x):
    B, h, L, d_k = x.shape
    return x.reshape(B, L, h * d_k)


adapter = with_formulas("heads_split_without_transpose", split_heads=split_heads, merge_heads=merge_heads)

CAUGHT_BY = {
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "base_size_forward_matches_golden",
    "batch_equals_rows_run_one_at_a_time",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "cross_attention_matches_reference",
    "cross_attention_reads_every_real_source_position",
    "decode_matches_reference",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "encoder_layer_is_permutation_equivariant",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "head_i_reads_only_its_own_columns_of_W_Q_and_W_K",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "masking_keys_equals_removing_them",
    "multi_head_attention_matches_reference_at_base_size",
    "self_attention_matches_reference",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
ADVISORY = {
    "fully_masked_row_gives_zero_weights_and_only_b_O",
}
MESSAGES = {
    "self_attention_matches_reference": "(mutant:heads_split_without_transpose), confirmed on a second",
    "head_i_reads_only_its_own_columns_of_W_Q_and_W_K": "(mutant:heads_split_without_transpose), confirmed on a second",
}
