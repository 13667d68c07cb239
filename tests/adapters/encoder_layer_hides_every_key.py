"""An encoder layer whose padding mask hides every key (a mask inverted by ``~`` on integers, say): no query reads
any position, each row's attention is the fully masked row's output b_O, and the layer is position-wise."""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class HidesEveryKey(NumpyAdapter):
    def encoder_layer(self, x, weights, h, eps, src_mask, *, record=None):
        hidden = np.full(np.shape(src_mask), -np.inf, dtype=np.asarray(src_mask).dtype)  # the bug: nothing visible
        return super().encoder_layer(x, weights, h, eps, hidden, record=record)


adapter = HidesEveryKey()
