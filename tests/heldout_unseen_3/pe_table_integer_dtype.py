"""§3.5 positional encoding written into a table of integer dtype: the table is allocated with
``np.zeros_like(positions)`` where ``positions`` is the integer grid ``np.arange(n)`` repeated over the columns,
so every sine and cosine stored in it is truncated toward zero to an integer: the table holds 0 almost everywhere
and 1 only where a cosine is exactly 1 (position 0's odd columns), where the paper's PE(pos, 2i) =
sin(pos / 10000^(2i/d_model)) and PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)) are real numbers in [-1, 1]. The
angles and the sine/cosine placement are right; only the storage dtype is wrong (cast to float at the end).

Style: a closure factory (a cached table builder), NumPy, float32 declared; positional_encoding only.
"""

import numpy as np

from conformance import Conventions


def make_encoder(base=10000.0):
    cache = {}

    def encode(n, d_model):
        if (n, d_model) not in cache:
            positions = np.repeat(np.arange(n)[:, None], d_model, axis=1)  # (n, d_model) int64
            table = np.zeros_like(positions)
            freq = base ** (-np.arange(0, d_model, 2) / d_model)
            table[:, 0::2] = np.sin(positions[:, 0::2] * freq)
            table[:, 1::2] = np.cos(positions[:, 1::2] * freq)
            cache[(n, d_model)] = table.astype(np.float32)
        return cache[(n, d_model)].copy()

    return encode


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")

    def __init__(self):
        self.positional_encoding = make_encoder()


adapter = Adapter()
