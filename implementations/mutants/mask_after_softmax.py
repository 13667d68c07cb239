"""Mask applied after the softmax (weights * keep): masked weights are 0 but the rows no longer sum to 1.

Violates §3.2.3: masking happens inside the softmax, "by masking out (setting to -inf) all values in
the input of the softmax which correspond to illegal connections", so the visible weights still sum to 1.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("mask_after_softmax", mask_after_softmax=True)

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
    "masking_keys_equals_removing_them",
    "multi_head_attention_matches_reference_at_base_size",
    "self_attention_matches_reference",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "masked_rows_sum_to_one_in_every_head": "(mutant:mask_after_softmax), confirmed on a second",
}
