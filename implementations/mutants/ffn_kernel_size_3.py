"""FFN hidden layer reads the neighbouring positions too, as a convolution of kernel size 3 would.

Violates §3.3: "each of the layers in our encoder and decoder contains a fully connected feed-forward
network, which is applied to each position separately and identically ... Another way of describing
this is as two convolutions with kernel size 1."
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class KernelSize3(NumpyAdapter):
    def activation(self, z):  # z (B, L, d_ff): x W1 + b1 at every position
        neighbours = np.roll(z, 1, axis=-2) + np.roll(z, -1, axis=-2)  # the bug: positions i - 1 and i + 1
        return np.maximum(0.0, z + 0.5 * neighbours)


adapter = KernelSize3()
