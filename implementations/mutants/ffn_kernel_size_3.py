"""FFN hidden layer reads the neighbouring positions too, as a convolution of kernel size 3 would.

Violates §3.3: "each of the layers in our encoder and decoder contains a fully connected feed-forward
network, which is applied to each position separately and identically ... Another way of describing
this is as two convolutions with kernel size 1."
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def relu_with_neighbours(z):  # z (B, L, d_ff): x W1 + b1 at every position
    return torch.relu(z + 0.5 * (torch.roll(z, 1, dims=-2) + torch.roll(z, -1, dims=-2)))


adapter = with_formulas("ffn_kernel_size_3", activation=relu_with_neighbours)

CAUGHT_BY = {
    "appending_source_padding_leaves_logits_unchanged",
    "appending_target_padding_leaves_real_logits_unchanged",
    "base_size_forward_matches_golden",
    "batch_equals_rows_run_one_at_a_time",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "decode_matches_reference",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decoder_output_up_to_t_ignores_later_positions",
    "encode_matches_reference",
    "encoder_layer_is_permutation_equivariant",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "feed_forward_acts_on_each_position_alone",
    "feed_forward_matches_reference",
    "feed_forward_matches_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "logits_up_to_t_ignore_later_target_tokens",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "feed_forward_acts_on_each_position_alone": "(mutant:ffn_kernel_size_3), confirmed on a second",
    "encode_matches_reference": "first divergence: encoder.0 (feed-forward sublayer suspected)",
}
