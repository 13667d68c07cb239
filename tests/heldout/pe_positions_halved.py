"""Positions halved before the sinusoids (pos / 2, a stride taken twice), written with np.outer."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float32", framework="numpy")

    def positional_encoding(self, n, d_model):
        angle = np.outer(np.arange(n) / 2.0, np.power(10000.0, -np.arange(0, d_model, 2) / d_model))
        return np.stack([np.sin(angle), np.cos(angle)], -1).reshape(n, d_model).astype(np.float32)


adapter = Adapter()
