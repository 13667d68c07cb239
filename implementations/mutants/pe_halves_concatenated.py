"""Positional encoding with all sines in the first half and all cosines in the second half.

Violates §3.5: PE(pos, 2i) = sin and PE(pos, 2i+1) = cos interleave within each column pair. The
lesson's hand check at position 1 reads (0.841, 0.540, 0.682, 0.732); this gives (0.841, 0.750, ...).
"""

import dataclasses

import torch

from conformance.implementations.reference.adapter import ReferenceAdapter
from conformance.implementations.reference.model import REFERENCE


def concatenated_positional_encoding(n, d_model):
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    angle = pos / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).to(torch.float32)


CAUGHT_BY = {
    "base_size_forward_matches_golden",
    "decode_matches_reference",
    "encode_matches_reference",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
    "pe_matches_formula_for_any_size",
    "pe_matches_published_values",
    "pe_position_0_is_sin_0_and_cos_0",
    "pe_shift_by_k_is_a_rotation",
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
adapter = ReferenceAdapter(
    formulas=dataclasses.replace(REFERENCE, positional_encoding=concatenated_positional_encoding),
    name="mutant:pe_halves_concatenated",
)
