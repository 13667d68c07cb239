"""Attention scores divided by d_k instead of sqrt(d_k).

Violates §3.2.1: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, "we scale the dot products by
1/sqrt(d_k)". Dividing by d_k flattens the softmax towards uniform weights as d_k grows; at d_k = 1 the
two agree, so only checks with d_k > 1 can see it.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("attention_scaled_by_d_k", scale=lambda q: 1.0 / q.shape[-1])
