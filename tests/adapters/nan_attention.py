"""Attention that returns NaN for a fully masked row (softmax of all -inf): a per-check error."""

import numpy as np

from conformance import Conventions


class NanAttention:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def scaled_dot_product_attention(self, q, k, v, mask):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        with np.errstate(invalid="ignore"):
            e = np.exp(scores - scores.max(-1, keepdims=True))
            weights = e / e.sum(-1, keepdims=True)
        return weights @ v, weights


adapter = NanAttention()
