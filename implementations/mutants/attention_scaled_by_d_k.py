"""Attention scores divided by d_k instead of sqrt(d_k).

Violates §3.2.1: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, "we scale the dot products by
1/sqrt(d_k)". Dividing by d_k flattens the softmax towards uniform weights as d_k grows; at d_k = 1 the
two agree, so only checks with d_k > 1 can see it.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class ScaledByD_k(NumpyAdapter):
    def scale_scores(self, scores, d_k, h):
        return scores / d_k  # the bug: d_k, not sqrt(d_k)


adapter = ScaledByD_k()
