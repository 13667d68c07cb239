"""§3.5 positional encoding with the frequency written as exp(-2i * log(10000) / d_model) but with log10 in place
of the natural log: exp(-2i * 4 / d_model), i.e. a wavelength base of e^4 (about 54.6) instead of 10000.
Pure-Python loops over positions and columns."""

import math

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="python")

    def positional_encoding(self, n, d_model):
        rows = []
        for pos in range(n):
            row = []
            for col in range(d_model):
                pair = col - col % 2
                angle = pos * math.exp(-pair * math.log10(10000.0) / d_model)  # the bug: log10, not log
                row.append(math.sin(angle) if col % 2 == 0 else math.cos(angle))
            rows.append(row)
        return np.array(rows)


adapter = Adapter()
