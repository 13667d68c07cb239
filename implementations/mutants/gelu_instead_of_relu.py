"""GELU instead of ReLU in the feed-forward network.

Violates §3.3: FFN(x) = max(0, x W1 + b1) W2 + b2, "two linear transformations with a ReLU activation
in between" (GELU is BERT's and GPT's choice, not the original Transformer's). The exact GELU,
x Phi(x) = x (1 + erf(x / sqrt(2))) / 2, as ``torch.nn.functional.gelu`` computes by default.
"""

import math

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter

_erf = np.frompyfunc(math.erf, 1, 1)


class GELU(NumpyAdapter):
    def activation(self, z):
        return 0.5 * z * (1.0 + _erf(z / math.sqrt(2.0)).astype(np.float64))  # the bug: GELU, not max(0, z)


adapter = GELU()
