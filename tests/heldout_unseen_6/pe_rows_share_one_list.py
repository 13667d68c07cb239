"""§3.5 positional encoding whose rows are one and the same list: the table is preallocated as
``[[0.0] * d_model] * n``, which repeats *one* row object n times (the list-multiplication aliasing), so every
position's loop writes into the same row and, when the loops end, every row holds the last position's encoding:
PE(pos, :) = PE(n - 1, :) for every pos, where the paper's row pos holds sin(pos / 10000^(2i/d_model)) and
cos(pos / 10000^(2i/d_model)). The formula itself (the angle, the exponent 2i/d_model with i the pair, sine in the
even and cosine in the odd columns) is right, and so is the table for n = 1.

Style: pure Python (nested loops over lists, ``math``), float64; positional_encoding only.
"""

import math

import numpy as np

from conformance import Conventions


class ListSinusoids:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="pure Python")

    def positional_encoding(self, n, d_model):
        table = [[0.0] * d_model] * n
        for pos in range(n):
            row = table[pos]
            for i in range(0, d_model, 2):  # i is the even column 2k: the exponent 2k / d_model
                angle = pos / 10000 ** (i / d_model)
                row[i] = math.sin(angle)
                row[i + 1] = math.cos(angle)
        return np.array(table, dtype=np.float64)


adapter = ListSinusoids()
