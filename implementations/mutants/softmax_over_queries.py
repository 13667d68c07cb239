"""Softmax over the queries (dim=-2) instead of the keys.

Violates §3.2.1: softmax(Q K^T / sqrt(d_k)) normalises each query's row of scores over the keys, so
each output is a weighted average of the values. Over the query axis, the columns sum to 1 instead,
and later positions change the weights of earlier ones through the column sums.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("softmax_over_queries", softmax_dim=-2)

CAUGHT_BY = {
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "attention_matches_formula",
    "attention_rows_sum_to_one",
    "base_size_forward_matches_golden",
    "batch_equals_rows_run_one_at_a_time",
    "causal_mask_hides_the_future_and_keeps_the_diagonal",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "cross_attention_matches_reference",
    "decode_matches_reference",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decoder_output_up_to_t_ignores_later_positions",
    "encode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "logits_up_to_t_ignore_later_target_tokens",
    "masked_rows_sum_to_one_in_every_head",
    "multi_head_attention_matches_reference_at_base_size",
    "self_attention_matches_reference",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "masked_rows_sum_to_one_in_every_head": "row sums of masked weights",
    "appending_target_padding_leaves_real_logits_unchanged": "(mutant:softmax_over_queries), confirmed on a second",
}
