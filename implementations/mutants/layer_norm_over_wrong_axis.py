"""LayerNorm normalises each feature over the first (batch) axis, as BatchNorm does, not each row over its features.

Violates §3.1 (Ba et al. 2016, "Layer normalization"): mu and sigma are the mean and variance of one
position's d_model features, so every position is normalised alone. On a single vector (one axis) the
two agree; on a batch, rows are normalised against each other.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def layer_norm_over_first_axis(x, gamma, beta, eps):
    mu = x.mean(0, keepdim=True)  # the bug: axis 0, not -1
    var = ((x - mu) ** 2).mean(0, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


adapter = with_formulas("layer_norm_over_wrong_axis", layer_norm=layer_norm_over_first_axis)

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "batch_equals_rows_run_one_at_a_time",
    "changing_padded_source_positions_leaves_real_positions_unchanged",
    "cross_attention_reads_every_real_source_position",
    "decode_matches_reference",
    "decoder_layer_ignores_padded_target_and_source_keys",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decoder_output_up_to_t_ignores_later_positions",
    "decoder_position_reads_itself",
    "encode_matches_reference",
    "encoder_layer_matches_reference",
    "encoder_layer_matches_reference_at_base_size",
    "layer_norm_matches_formula",
    "layer_norm_normalises_each_row_over_its_own_features",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
