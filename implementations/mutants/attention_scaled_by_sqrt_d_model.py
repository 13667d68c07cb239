"""Attention scores divided by sqrt(d_model) instead of sqrt(d_k) of one head.

Violates §3.2.1 and §3.2.2: each head attends with d_k = d_model / h dimensions and its scores are
scaled by 1/sqrt(d_k) ("we scale the dot products by 1/sqrt(d_k)"); a layer written as
``scores / math.sqrt(self.d_model)`` scales by sqrt(h) too much. On a single head (h = 1, or the bare
attention formula, where d_model = d_k) it is right, so only multi-head checks with h > 1 can see it.
"""

import math

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class ScaledBySqrtD_model(NumpyAdapter):
    def scale_scores(self, scores, d_k, h):
        return scores / math.sqrt(h * d_k)  # the bug: d_model = h d_k, not d_k


adapter = ScaledBySqrtD_model()
