"""Mutant: no causal mask in the decoder self-attention: position t reads the future (§3.2.3)."""

import torch
from _mutant import with_formulas

adapter = with_formulas("no_causal_mask", causal_mask=lambda T: torch.ones(T, T, dtype=torch.bool))


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "logits_up_to_t_ignore_later_target_tokens",
    "decoder_output_up_to_t_ignores_later_positions",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "greedy_decoding_picks_the_argmax_at_every_step",
)
MESSAGES = {
    "decoder_layer_matches_reference": "likely cause: no causal mask",
    "logits_match_reference": "first divergence: decoder.0",
}
