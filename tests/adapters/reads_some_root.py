"""An adapter that finds its checkout through an environment variable, read when imported (as adapters of
real code do: ``os.environ["EXT_ROOT"]``); only the positional encoding, correct."""

import os

import numpy as np

from conformance import Conventions

SOME_ROOT = os.environ["SOME_ROOT"]


class ReadsSomeRoot:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def positional_encoding(self, n, d_model):
        angle = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
        pe = np.zeros((n, d_model))
        pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
        return pe


adapter = ReadsSomeRoot()
