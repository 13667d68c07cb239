"""Masked scores filled with 0 (or multiplied by the mask) instead of -inf: hidden keys keep a real weight.

Violates §3.2.3: "We implement this inside of scaled dot-product attention by masking out (setting to
-inf) all values in the input of the softmax which correspond to illegal connections." A score of 0
is an ordinary score: exp(0) gives a masked key a weight that is not exactly 0. Written as
``scores * keep`` or ``scores.masked_fill(~keep, 0)``.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class FilledWithZero(NumpyAdapter):
    def mask_scores(self, scores, additive):
        return scores if additive is None else np.where(np.isneginf(additive), 0.0, scores)  # the bug: 0, not -inf


adapter = FilledWithZero()
