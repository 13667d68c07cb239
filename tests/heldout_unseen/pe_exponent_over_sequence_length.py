"""§3.5 positional encoding whose exponent divides by the number of positions n instead of d_model:
PE(pos, 2i) = sin(pos / 10000^(2i/n)), PE(pos, 2i+1) = cos(pos / 10000^(2i/n)), where the paper has
10000^(2i/d_model) (the two arguments of the function, n and d_model, confused in the denominator). The table
is right only when n == d_model; for a sequence shorter than d_model the frequencies fall far too fast.

Style: NumPy with explicit index arithmetic (a flat index k split into pos = k // d and column j = k % d),
float64; positional_encoding only.
"""

import numpy as np

from conformance import Conventions


class IndexArithmetic:
    conventions = Conventions(mask="keep", dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        n, d = int(n), int(d_model)
        k = np.arange(n * d)
        pos, col = k // d, k % d
        pair = col - (col % 2)  # 2i for both columns of a pair
        angle = pos / np.power(10000.0, pair / n)  # the bug: n (positions) where the paper has d_model
        flat = np.where(col % 2 == 0, np.sin(angle), np.cos(angle))
        return flat.reshape(n, d)


adapter = IndexArithmetic()
