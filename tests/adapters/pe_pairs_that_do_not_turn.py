"""A positional encoding whose pairs after the first do not turn with the position (sin 0, cos 0 in every row): a
wavelength 2 pi / omega read off it is infinite, which the published-wavelength check must fail, not crash on."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        pe = np.zeros((n, d_model))
        pe[:, 1::2] = 1.0  # cos 0
        pe[:, 0] = np.sin(np.arange(n))  # pair 0 turns at 1 rad a position, as the paper's
        pe[:, 1] = np.cos(np.arange(n))
        return pe


adapter = Adapter()
