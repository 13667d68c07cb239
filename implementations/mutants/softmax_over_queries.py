"""Softmax over the queries (dim=-2) instead of the keys.

Violates §3.2.1: softmax(Q K^T / sqrt(d_k)) normalises each query's row of scores over the keys, so
each output is a weighted average of the values. Over the query axis, the columns sum to 1 instead,
and later positions change the weights of earlier ones through the column sums.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("softmax_over_queries", softmax_dim=-2)
