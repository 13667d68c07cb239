"""Softmax over the queries (dim=-2) instead of the keys.

Violates §3.2.1: softmax(Q K^T / sqrt(d_k)) normalises each query's row of scores over the keys, so
each output is a weighted average of the values. Over the query axis, the columns sum to 1 instead,
and later positions change the weights of earlier ones through the column sums.
"""

import numpy as np

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class SoftmaxOverQueries(NumpyAdapter):
    def softmax(self, masked):
        e = np.exp(masked - masked.max(-2, keepdims=True))  # the bug: axis -2, the queries
        return e / e.sum(-2, keepdims=True)


adapter = SoftmaxOverQueries()
