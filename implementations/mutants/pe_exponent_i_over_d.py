"""Positional encoding with exponent i / d_model instead of 2i / d_model: wavelengths grow too slowly.

Violates §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model));
"the wavelengths form a geometric progression from 2 pi to 10000 * 2 pi". With i / d_model (i the pair
index) the longest wavelength is only 100 * 2 pi.
"""

import math

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class ExponentIOverD(NumpyAdapter):
    def pe_frequencies(self, d_model):
        return np.exp(np.arange(d_model // 2) * (-math.log(10000.0) / d_model))  # the bug: i, not 2i


adapter = ExponentIOverD()
