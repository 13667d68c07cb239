"""Positional encoding with frequencies 10000^(-2i/(d_model-2)) instead of 10000^(-2i/d_model) (tensor2tensor, fairseq).

Violates §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)); "the wavelengths form a geometric progression
from 2 pi to 10000 * 2 pi". fairseq's ``emb = math.log(10000) / (half_dim - 1)`` (ported to Hugging Face's
FSMT, ``modeling_fsmt.py``: "matches tensor2tensor, but differs slightly from ... Section 3.5") spreads the
same progression over one pair fewer: the last pair i = d_model/2 - 1 gets the wavelength 10000 * 2 pi that
the paper reaches only in the limit, and every wavelength but the first is longer than the paper's.
"""

import math

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class FrequenciesOverDMinus2(NumpyAdapter):
    def pe_frequencies(self, d_model):
        half = d_model // 2
        # the bug: ln(10000) / (half - 1), not / half. fairseq divides by zero at d_model = 2, where the one
        # frequency (i = 0) is 1 whatever the divisor: kept defined there, equal to the paper's
        return np.exp(np.arange(half) * (-math.log(10000.0) / max(half - 1, 1)))


adapter = FrequenciesOverDMinus2()
