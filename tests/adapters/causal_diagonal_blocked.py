"""Mutant: the causal mask blocks the diagonal too (tril(-1)): a position cannot read itself, and the
start token reads nothing (§3.2.3: "the diagonal stays visible").
"""

import torch
from _mutant import with_formulas

adapter = with_formulas("causal_diagonal_blocked", causal_mask=lambda T: torch.ones(T, T, dtype=torch.bool).tril(-1))


# What tests/test_catalogue.py requires when it certifies this mutant against the catalogue:
# exactly these checks fail (and error), and these messages name the bug.
CAUGHT_BY = (
    "decoder_layer_matches_reference",
    "decoder_layer_matches_reference_at_base_size",
    "decode_matches_reference",
    "decoder_position_reads_itself",
    "logits_match_reference",
    "logits_match_reference_at_base_size",
)
MESSAGES = {
    "decoder_layer_matches_reference": "likely cause: causal mask blocks the diagonal",
    "decoder_position_reads_itself": "position 0 reads no value",
}
