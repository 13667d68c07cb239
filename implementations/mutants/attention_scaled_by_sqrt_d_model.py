"""Attention scores divided by sqrt(d_model) instead of sqrt(d_k) of one head.

Violates §3.2.1 and §3.2.2: each head attends with d_k = d_model / h dimensions and its scores are
scaled by 1/sqrt(d_k) ("we scale the dot products by 1/sqrt(d_k)"); a layer written as
``scores / math.sqrt(self.d_model)`` scales by sqrt(h) too much. On a single head (h = 1, or the bare
attention formula, where d_model = d_k) it is right, so only multi-head checks with h > 1 can see it.
"""

import math

from conformance.implementations.mutants._build import with_attention


def inverse_sqrt_d_model(q):  # q (B, h, L, d_k) inside multi-head attention, (..., L, d_k) alone
    h = q.shape[-3] if q.dim() == 4 else 1
    return 1.0 / math.sqrt(h * q.shape[-1])


adapter = with_attention("attention_scaled_by_sqrt_d_model", scale=inverse_sqrt_d_model)
