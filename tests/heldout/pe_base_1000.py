"""Sinusoids with base 1000 instead of 10000, written as one NumPy function over a position grid."""

import numpy as np

from conformance import Conventions


def sinusoid_grid(length, width, base=1000.0):
    pos = np.arange(length)[:, None]
    rate = base ** (-np.arange(0, width, 2) / width)
    grid = np.zeros((length, width))
    grid[:, ::2], grid[:, 1::2] = np.sin(pos * rate), np.cos(pos * rate)
    return grid


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        return sinusoid_grid(n, d_model)


adapter = Adapter()
