"""Positional encoding counts positions from 1: the first token gets PE(1) instead of PE(0).

Violates §3.5 as the lesson's Step 2 applies it: positions are 0, 1, 2, ... ("pos is the position"),
so the first token's encoding is (0, 1, 0, 1, ...).
"""

from conformance.implementations.mutants._build import with_formulas
from conformance.implementations.reference.model import sinusoidal_positional_encoding


def positional_encoding_from_one(n, d_model):
    return sinusoidal_positional_encoding(n + 1, d_model)[1:]  # rows for positions 1..n


adapter = with_formulas("pe_positions_from_one", positional_encoding=positional_encoding_from_one)

CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "encode_matches_reference",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "pe_matches_formula_for_any_size",
    "pe_matches_published_values",
    "pe_position_0_is_sin_0_and_cos_0",
    "pe_shift_is_published_rotation",
    "pe_wavelengths_are_geometric_for_any_d_model",
    "pe_wavelengths_match_published_values[d_model=512]",
    "pe_wavelengths_match_published_values[d_model=64]",
    "published_positional_encoding_values",
    "published_rotation_pairs",
    "published_wavelengths",
    "trained_checkpoint_attention_matches_golden",
    "trained_checkpoint_decodes_like_the_reference",
    "trained_checkpoint_matches_reference_on_fresh_inputs",
    "trained_checkpoint_outputs_match_golden",
}
ERRORED = set()
