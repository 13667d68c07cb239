"""Positional encoding counts positions from 1: the first token gets PE(1) instead of PE(0).

Violates §3.5 as the lesson's Step 2 applies it: positions are 0, 1, 2, ... ("pos is the position"),
so the first token's encoding is (0, 1, 0, 1, ...).
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class PositionsFromOne(NumpyAdapter):
    def pe_positions(self, n):
        return np.arange(1, n + 1, dtype=np.float64)  # the bug: 1..n, not 0..n-1


adapter = PositionsFromOne()
