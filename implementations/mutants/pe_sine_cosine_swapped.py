"""Positional encoding with sine and cosine swapped: cos in the even columns 2i, sin in the odd ones.

Violates §3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) and PE(pos, 2i+1) = cos(...); the lesson's
Step 2 writes "even columns 2i: sine", "odd columns 2i + 1: cosine", and at position 0 "every sine is 0
and every cosine is 1", so the first token's encoding is (0, 1, 0, 1, ...), not (1, 0, 1, 0, ...).
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class SineCosineSwapped(NumpyAdapter):
    def pe_interleave(self, angles):
        return np.stack([np.cos(angles), np.sin(angles)], axis=-1).reshape(angles.shape[0], -1)  # the bug


adapter = SineCosineSwapped()
