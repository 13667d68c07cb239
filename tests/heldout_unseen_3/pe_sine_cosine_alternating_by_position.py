"""§3.5 positional encoding whose sine/cosine split is sliced along the positions instead of the columns: the
angle grid (n, d_model) is right (column j has the angle pos / 10000^(2*(j//2)/d_model)), but the code writes
``pe[0::2] = np.sin(grid[0::2])`` and ``pe[1::2] = np.cos(grid[1::2])`` (the ``:,`` of ``pe[:, 0::2]``
forgotten), so the even positions (rows) hold the sine in every column and the odd positions the cosine in every
column, where the paper puts the sine in the even columns and the cosine in the odd columns of every position:
PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). Position 0 becomes
all zeros instead of (0, 1, 0, 1, ...).

Style: one NumPy function over a broadcast grid, float64; positional_encoding only.
"""

import numpy as np

from conformance import Conventions

conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")


def positional_encoding(n, d_model):
    pos = np.arange(n, dtype=np.float64)[:, None]
    col = np.arange(d_model)[None, :]
    grid = pos / np.power(10000.0, 2 * (col // 2) / d_model)  # (n, d_model)
    pe = np.empty_like(grid)
    pe[0::2] = np.sin(grid[0::2])
    pe[1::2] = np.cos(grid[1::2])
    return pe


import sys  # noqa: E402  (the module itself is the adapter)

adapter = sys.modules[__name__]
