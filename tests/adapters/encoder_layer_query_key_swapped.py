"""An encoder layer whose self-attention projects the queries with W_K and the keys with W_Q (the scores come out
transposed); everything else is the paper's. Written as a float64 NumPy loop over the heads."""

import numpy as np

from conformance import Conventions
from conformance.implementations.numpy_impl.adapter import NumpyAdapter

_paper = NumpyAdapter()


class QueryKeySwapped:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")

    def encoder_layer(self, x, weights, h, eps, src_mask):
        swapped = dict(weights)
        swapped["self_attn.W_Q"], swapped["self_attn.W_K"] = weights["self_attn.W_K"], weights["self_attn.W_Q"]
        if "self_attn.b_Q" in weights:
            swapped["self_attn.b_Q"], swapped["self_attn.b_K"] = weights["self_attn.b_K"], weights["self_attn.b_Q"]
        return _paper.encoder_layer(np.asarray(x, np.float64), swapped, h, eps, src_mask)


adapter = QueryKeySwapped()
