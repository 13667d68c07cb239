"""Mutant: the mask applied after the softmax (weights * keep): masked weights are 0 but the rows no longer
sum to 1 (§3.2.3: masking happens inside the softmax, by setting the scores to -inf).
"""

import math

import torch
from _mutant import with_formulas


def attention(q, k, v, keep):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if keep is not None:
        weights = weights * keep
    return weights @ v, weights


adapter = with_formulas("mask_after_softmax", attention=attention)


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
    "masked_rows_sum_to_one_in_every_head",
    "causal_mask_hides_the_future_and_keeps_the_diagonal",
    "fully_masked_row_gives_zero_weights_and_only_b_O",
    "masking_keys_equals_removing_them",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "self_attention_matches_reference",
    "cross_attention_matches_reference",
    "multi_head_attention_matches_reference_at_base_size",
)
MESSAGES = {
    "masked_rows_sum_to_one_in_every_head": "likely cause: the mask applied after the softmax",
}
