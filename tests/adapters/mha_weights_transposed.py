"""Multi-head attention (float64) whose output is the paper's but whose returned weights are transposed, keys
before queries: (B, h, Lk, Lq) read as (B, h, Lq, Lk) where the two lengths agree. No known bug touches only the
returned map: none may be named, whichever check fails on it."""

import numpy as np

from conformance import Conventions
from conformance.implementations.numpy_impl.adapter import NumpyAdapter

_paper = NumpyAdapter()


class WeightsTransposed:
    conventions = Conventions(mask="additive", batch_first=True, dtype="float64", framework="numpy")

    def multi_head_attention(self, query, key, value, weights, h, mask):
        out, attn = _paper.multi_head_attention(np.asarray(query, np.float64), key, value, weights, h, mask)
        return out, attn.swapaxes(-1, -2) if attn.shape[-1] == attn.shape[-2] else attn


adapter = WeightsTransposed()
