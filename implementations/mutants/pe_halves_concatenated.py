"""Positional encoding with all sines in the first half and all cosines in the second half.

Violates §3.5: PE(pos, 2i) = sin and PE(pos, 2i+1) = cos interleave within each column pair. The
lesson's hand check at position 1 reads (0.841, 0.540, 0.682, 0.732); this gives (0.841, 0.750, ...).
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class HalvesConcatenated(NumpyAdapter):
    def pe_interleave(self, angles):
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)  # the bug: [sin ... | cos ...]


adapter = HalvesConcatenated()
