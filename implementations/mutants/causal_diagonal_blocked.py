"""Causal mask blocks the diagonal too (tril(-1)): a position cannot read itself, the start token reads nothing.

Violates §3.2.3: the decoder's self-attention lets "each position in the decoder attend to all
positions in the decoder up to and including that position"; the diagonal stays visible.
"""

import torch

from conformance.implementations.mutants._build import with_formulas

adapter = with_formulas("causal_diagonal_blocked", causal_mask=lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1))

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decoder_position_reads_itself",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "published_shapes_of_attention_weights",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
MESSAGES = {
    "decoder_layer_matches_reference": "(mutant:causal_diagonal_blocked), confirmed on a second",
    "decoder_position_reads_itself": "position 0 reads no value",
}
