"""Attack: NaN and inf, which compare unequal to everything and slip through careless ``not (a > b)`` tests.

Expected: each check an error naming the non-finite values (LayerNorm: NaN, PE: inf, rate: inf, attention: NaN),
the conventions about a fully masked row included: NaN where every query sees a key is no such row.
"""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def layer_norm(self, x, gamma, beta, eps):
        return np.full(np.shape(x), np.nan)

    def positional_encoding(self, n, d_model):
        return np.full((n, d_model), np.inf)

    def learning_rate(self, step, d_model, warmup):
        return float("inf")

    def scaled_dot_product_attention(self, q, k, v, mask):
        return np.full((*q.shape[:-1], v.shape[-1]), np.nan), np.full((*q.shape[:-1], k.shape[-2]), np.nan)

    def multi_head_attention(self, query, key, value, weights, h, mask):
        batch, queries, keys = query.shape[0], query.shape[1], key.shape[1]
        return np.full(query.shape, np.nan), np.full((batch, h, queries, keys), np.nan)


adapter = Adapter()
