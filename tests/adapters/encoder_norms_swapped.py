"""An encoder layer that normalises its self-attention sublayer with norm2's gain and shift and its feed-forward
sublayer with norm1's: the two LayerNorms' weights read the other way round. Float64 NumPy."""

import numpy as np

from conformance import Conventions
from conformance.implementations.numpy_impl.adapter import NumpyAdapter

_paper = NumpyAdapter()


class NormsSwapped:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")

    def encoder_layer(self, x, weights, h, eps, src_mask):
        read = dict(weights)
        for part in ("gamma", "beta"):
            read[f"norm1.{part}"], read[f"norm2.{part}"] = weights[f"norm2.{part}"], weights[f"norm1.{part}"]
        return _paper.encoder_layer(np.asarray(x, np.float64), read, h, eps, src_mask)


adapter = NormsSwapped()
