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


adapter = ReferenceAdapter(
    formulas=dataclasses.replace(REFERENCE, positional_encoding=concatenated_positional_encoding),
    name="mutant:pe_halves_concatenated",
)
