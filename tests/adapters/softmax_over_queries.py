"""Mutant: the softmax normalises over the queries (dim=-2) instead of the keys (§3.2.1): later positions
then change the weights of earlier ones, through the column sums.
"""

import math

import torch
from _mutant import with_formulas


def attention(q, k, v, keep):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-2), nan=0.0)  # an all-masked column gives 0
    return weights @ v, weights


adapter = with_formulas("softmax_over_queries", attention=attention)


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
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "self_attention_matches_reference",
    "cross_attention_matches_reference",
    "multi_head_attention_matches_reference_at_base_size",
)
MESSAGES = {
    "masked_rows_sum_to_one_in_every_head": "row sums of masked weights",
    "appending_target_padding_leaves_real_logits_unchanged": "a softmax over the query axis",
}
