"""§3.5 positional encoding that writes the cosine as a shifted sine with the wrong sign of the shift:
PE(pos, 2i+1) = sin(angle - π/2) = -cos(angle), where cos(angle) = sin(angle + π/2); the paper has
PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). Every odd column is negated (position 0 reads 0, -1, 0, -1, ...
instead of 0, 1, 0, 1, ...); the even columns sin(pos / 10000^(2i/d_model)) are right, as are the frequencies.

Style: pure Python (nested loops over positions and column pairs, ``math.sin`` only), float64; positional_encoding
only.
"""

import math

import numpy as np

from conformance import Conventions


class LoopEncoding:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def positional_encoding(self, n, d_model):
        rows = []
        for pos in range(n):
            row = []
            for i in range(0, d_model, 2):
                angle = pos / 10000 ** (i / d_model)
                row.append(math.sin(angle))
                row.append(math.sin(angle - math.pi / 2))  # cos as a quarter-period shift of the sine
            rows.append(row[:d_model])
        return np.array(rows, dtype=np.float64).reshape(n, d_model)


adapter = LoopEncoding()
