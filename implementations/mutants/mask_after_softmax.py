"""Mask applied after the softmax (weights * keep): masked weights are 0 but the rows no longer sum to 1.

Violates §3.2.3: masking happens inside the softmax, "by masking out (setting to -inf) all values in
the input of the softmax which correspond to illegal connections", so the visible weights still sum to 1.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class MaskAfterSoftmax(NumpyAdapter):
    def attention_weights(self, scores, additive):
        weights = self.softmax(scores)  # the bug: the softmax sees every key ...
        return weights if additive is None else np.where(np.isneginf(additive), 0.0, weights)  # ... then zeroes


adapter = MaskAfterSoftmax()
