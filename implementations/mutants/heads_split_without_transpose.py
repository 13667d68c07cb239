"""Heads split by reshaping (B, L, d_model) straight into (B, h, L, d_k), without the transpose.

Violates §3.2.2: head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V) with W_i^Q the i-th d_k columns of the
projection; reshaping without the transpose makes each "head" hold slices of several positions, and
head i no longer reads columns [i*d_k:(i+1)*d_k].
"""

from conformance.implementations.mutants._build import with_formulas


def split_heads(x, h):
    B, L, d_model = x.shape
    return x.reshape(B, h, L, d_model // h)  # the bug: no view(B, L, h, d_k).transpose(1, 2)


def merge_heads(x):
    B, h, L, d_k = x.shape
    return x.reshape(B, L, h * d_k)


adapter = with_formulas("heads_split_without_transpose", split_heads=split_heads, merge_heads=merge_heads)
