"""Attention scores not scaled: softmax(Q K^T) V, without the 1/sqrt(d_k) factor.

Violates §3.2.1: "We suspect that for large values of d_k, the dot products grow large in magnitude,
pushing the softmax function into regions where it has extremely small gradients. To counteract
this effect, we scale the dot products by 1/sqrt(d_k)." The softmax saturates as d_k grows; every
comparison with the reference that runs attention catches it, and the attention checks name the cause.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class Unscaled(NumpyAdapter):
    def scale_scores(self, scores, d_k, h):
        return scores  # the bug: no / sqrt(d_k)


adapter = Unscaled()
