"""No ReLU in the feed-forward network: FFN(x) = (x W1 + b1) W2 + b2, one linear map.

Violates §3.3: FFN(x) = max(0, x W1 + b1) W2 + b2, "two linear transformations with a ReLU activation
in between"; the lesson's toy: "ReLU sets 92.6% of the token c's 256 hidden numbers to 0". Without it
the two matrices collapse into one linear map of rank d_model at most.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class WithoutReLU(NumpyAdapter):
    def activation(self, z):
        return z  # the bug: no max(0, .)


adapter = WithoutReLU()
