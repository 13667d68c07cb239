"""An encoder whose layers hide keys 3 and S - 1 from every query and read every other key, later ones included: not
causal, though some later positions move no earlier one (written by a red team)."""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class HideTwo(NumpyAdapter):
    def encoder_layer(self, x, weights, h, eps, src_mask, *, record=None):
        mask = np.array(src_mask, dtype=np.float64, copy=True)
        mask[..., [3, mask.shape[-1] - 1]] = -np.inf  # the bug: two keys hidden from every query
        return super().encoder_layer(x, weights, h, eps, mask.astype(np.asarray(src_mask).dtype), record=record)


adapter = HideTwo()
