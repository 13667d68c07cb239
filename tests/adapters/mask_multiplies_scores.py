"""Mutant: the mask multiplied into the scores (scores * keep) instead of setting masked scores to -inf
(§3.2.3): a masked key gets score 0, so a real weight, not exactly 0.
"""

import math

import torch
from _mutant import with_formulas


def attention(q, k, v, keep):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if keep is not None:
        scores = scores * keep
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


adapter = with_formulas("mask_multiplies_scores", attention=attention)


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "encode_matches_reference",
    "logits_up_to_t_ignore_later_target_tokens",
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "batch_equals_rows_run_one_at_a_time",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "padded_query_rows_still_follow_the_formula",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "decoder_output_up_to_t_ignores_later_positions",
    "masked_weights_are_exactly_zero_in_every_head",
    "causal_mask_hides_the_future_and_keeps_the_diagonal",
    "fully_masked_row_gives_zero_weights_and_only_b_O",
    "masking_keys_equals_removing_them",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "self_attention_matches_reference",
    "cross_attention_matches_reference",
    "multi_head_attention_matches_reference_at_base_size",
    "guided_practice_masked_self_attention_hides_28_cells_per_head",
)
MESSAGES = {
    "masked_weights_are_exactly_zero_in_every_head": "not exactly 0",
    "encode_matches_reference": "first divergence: encoder.0 (self-attention sublayer suspected)",
}
