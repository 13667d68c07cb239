"""§3.5 positional encoding whose angle multiplies the position by 10000^(2i/d_model) instead of dividing by it:
PE(pos, 2i) = sin(pos * 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos * 10000^(2i/d_model)), where the paper has
sin(pos / 10000^(2i/d_model)) (the exponent's sign lost: frequencies 10000^(+2i/d_model) that grow with the column
instead of shrinking, wavelengths 2*pi*10000^(-2i/d_model) instead of 2*pi*10000^(2i/d_model)). Column pair 0 is
right; every other pair is wrong from position 1 on.

Style: pure-Python loops over positions and column pairs, lists of floats, float64; positional_encoding only.
"""

import math

import numpy as np

from conformance import Conventions


class LoopPositions:
    conventions = Conventions(mask="keep", dtype="float64", framework="pure python")

    def positional_encoding(self, n, d_model):
        rows = []
        for pos in range(int(n)):
            row = [0.0] * int(d_model)
            for j in range(0, int(d_model), 2):
                angle = pos * math.pow(10000.0, j / d_model)  # the bug: pos * 10000^(2i/d), not pos / 10000^(2i/d)
                row[j] = math.sin(angle)
                if j + 1 < d_model:
                    row[j + 1] = math.cos(angle)
            rows.append(row)
        return np.array(rows, dtype=np.float64).reshape(int(n), int(d_model))


adapter = LoopPositions()
