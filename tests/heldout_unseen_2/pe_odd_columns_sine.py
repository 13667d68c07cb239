"""§3.5 sinusoidal positional encoding that writes the sine in the odd columns too (a copy-pasted line kept
``np.sin``): PE(pos, 2i+1) = sin(pos / 10000^(2i/d_model)) = PE(pos, 2i), where the paper puts the cosine in the
odd columns, PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). The even columns are right; each odd column repeats
the even column before it (position 0 is all zeros instead of alternating 0, 1).

Style: NumPy with a generator that yields one (even column, odd column) pair at a time, stacked with np.column_stack,
float64; positional_encoding only.
"""

import numpy as np

from conformance import Conventions


def _column_pairs(n, d_model):
    pos = np.arange(n, dtype=np.float64)
    for two_i in range(0, d_model, 2):
        angle = pos / np.power(10000.0, two_i / d_model)
        yield np.sin(angle)
        yield np.sin(angle)


class PairGenerator:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return np.column_stack(list(_column_pairs(n, d_model))).reshape(n, d_model)


adapter = PairGenerator()
