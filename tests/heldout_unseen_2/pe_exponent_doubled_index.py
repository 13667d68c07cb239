"""§3.5 sinusoidal positional encoding whose exponent doubles a column index that is already even: the loop runs
over the even columns j = 2i and writes 10000^(2j / d_model) = 10000^(4i / d_model), so column pair i has the
angle pos / 10000^(4i/d_model), where the paper has PE(pos, 2i) = sin(pos / 10000^(2i/d_model)) and
PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). Column 0 and 1 are right; every other pair has a wavelength that
grows twice as fast in the exponent (the last pairs' wavelengths reach about 10000^2 instead of 10000).

Style: pure Python (nested loops over positions and columns, math.sin / math.cos, lists turned into one NumPy
array at the end), float64; positional_encoding only.
"""

import math

import numpy as np

from conformance import Conventions


class LoopTable:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def positional_encoding(self, n, d_model):
        rows = []
        for pos in range(n):
            row = [0.0] * d_model
            for i in range(0, d_model, 2):  # i is the even column index 0, 2, 4, ...
                angle = pos / (10000 ** ((2 * i) / d_model))
                row[i] = math.sin(angle)
                row[i + 1] = math.cos(angle)
            rows.append(row)
        return np.array(rows, dtype=np.float64).reshape(n, d_model)


adapter = LoopTable()
