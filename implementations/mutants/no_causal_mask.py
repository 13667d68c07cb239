"""No causal mask in the decoder self-attention: position t reads the future.

Violates §3.2.3: "We need to prevent leftward information flow in the decoder to preserve the
auto-regressive property. We implement this inside of scaled dot-product attention by masking out
(setting to -inf) all values in the input of the softmax which correspond to illegal connections."
"""

import torch

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("no_causal_mask", causal_mask=lambda T: torch.ones(T, T, dtype=torch.bool))

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decoder_output_up_to_t_ignores_later_positions",
    "greedy_decoding_picks_the_argmax_at_every_step",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "logits_up_to_t_ignore_later_target_tokens",
    "published_shapes_of_attention_weights",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "decoder_layer_matches_reference": "(mutant:no_causal_mask), confirmed on a second",
    "logits_match_reference": "first divergence: decoder.0",
}
