"""An encoder layer that hides every key, yet adds position 3's input to position 2's output: it reads another
position, in the middle only (written by a red team against the 'reads no other position' statement)."""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class MiddleReader(NumpyAdapter):
    def encoder_layer(self, x, weights, h, eps, src_mask, *, record=None):
        hidden = np.full(np.shape(src_mask), -np.inf, dtype=np.asarray(src_mask).dtype)
        out = np.array(super().encoder_layer(x, weights, h, eps, hidden, record=record))
        out[:, 2] += 0.5 * np.asarray(x)[:, 3]  # the bug: position 2 reads position 3
        return out


adapter = MiddleReader()
