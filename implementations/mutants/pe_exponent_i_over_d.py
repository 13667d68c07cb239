"""Positional encoding with exponent i / d_model instead of 2i / d_model: wavelengths grow too slowly.

Violates §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model));
"the wavelengths form a geometric progression from 2 pi to 10000 * 2 pi". With i / d_model (i the pair
index) the longest wavelength is only 100 * 2 pi.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def positional_encoding_i_over_d(n, d_model):
    pos = torch.arange(n, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, i / d_model)  # the bug: i, not 2i
    pe = torch.zeros(n, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


adapter = with_formulas("pe_exponent_i_over_d", positional_encoding=positional_encoding_i_over_d)
