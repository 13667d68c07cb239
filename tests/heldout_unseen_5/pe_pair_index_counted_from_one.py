"""§3.5 positional encoding whose pairs of columns are numbered from 1: the loop runs ``for i in range(1,
d_model // 2 + 1)`` and writes pair i into the columns 2(i - 1) and 2(i - 1) + 1, but the angle keeps the 1-based
i, pos / 10000^(2i/d_model), so the column pair k (k = 0 .. d_model/2 - 1) holds sin and cos of
pos / 10000^(2(k + 1)/d_model): every pair gets the next pair's frequency (the first pair is not sin(pos),
cos(pos), the last pair's wavelength reaches 10000 · 2π), where the paper's column 2i holds
sin(pos / 10000^(2i/d_model)) with i counted from 0. Position 0 is right (0, 1, 0, 1, ...); the base 10000, the
sine/cosine placement and the positions are right.

Style: pure Python (nested loops over positions and pairs, ``math.sin``/``math.cos``, a list of lists), float64,
a plain class with a static method; positional_encoding only.
"""

import math

import numpy as np

from conformance import Conventions


class Sinusoids:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    @staticmethod
    def positional_encoding(n, d_model):
        rows = [[0.0] * d_model for _ in range(n)]
        for pos in range(n):
            for i in range(1, d_model // 2 + 1):  # the pairs, numbered 1 .. d_model / 2
                angle = pos / 10000 ** (2 * i / d_model)
                rows[pos][2 * (i - 1)] = math.sin(angle)
                rows[pos][2 * (i - 1) + 1] = math.cos(angle)
        return np.array(rows, dtype=np.float64)


adapter = Sinusoids()
