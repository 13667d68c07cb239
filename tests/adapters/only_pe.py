"""An adapter that provides only the positional encoding: everything else must be not implemented."""

import numpy as np

from conformance import Conventions


class OnlyPositionalEncoding:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        angle = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
        pe = np.zeros((n, d_model))
        pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
        return pe


adapter = OnlyPositionalEncoding()
