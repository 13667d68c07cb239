"""Masked scores filled with 0 (or multiplied by the mask) instead of -inf: hidden keys keep a real weight.

Violates §3.2.3: "We implement this inside of scaled dot-product attention by masking out (setting to
-inf) all values in the input of the softmax which correspond to illegal connections." A score of 0
is an ordinary score: exp(0) gives a masked key a weight that is not exactly 0. Written as
``scores * keep`` or ``scores.masked_fill(~keep, 0)``.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("masked_scores_filled_with_zero", fill=0.0)

CAUGHT_BY = {
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "attention_matches_formula",
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
    "guided_practice_masked_self_attention_hides_28_cells_per_head",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "logits_up_to_t_ignore_later_target_tokens",
    "masked_weights_are_exactly_zero",
    "masked_weights_are_exactly_zero_in_every_head",
    "masking_keys_equals_removing_them",
    "multi_head_attention_matches_reference_at_base_size",
    "published_shapes_of_attention_weights",
    "self_attention_matches_reference",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
ADVISORY = {
    "fully_masked_row_gives_zero_weights_and_only_b_O",
    "fully_masked_row_gives_zero_weights_and_output",
}
MESSAGES = {
    "masked_weights_are_exactly_zero_in_every_head": "not exactly 0",
    "encode_matches_reference": "first divergence: encoder.0 (self-attention sublayer suspected)",
}
