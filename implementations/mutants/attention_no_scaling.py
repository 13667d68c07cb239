"""Attention scores not scaled: softmax(Q K^T) V, without the 1/sqrt(d_k) factor.

Violates §3.2.1: "We suspect that for large values of d_k, the dot products grow large in magnitude,
pushing the softmax function into regions where it has extremely small gradients. To counteract
this effect, we scale the dot products by 1/sqrt(d_k)." The softmax saturates as d_k grows; every
comparison with the reference that runs attention catches it, and the attention checks name the cause.
"""

from conformance.implementations.mutants._build import with_attention

adapter = with_attention("attention_no_scaling", scale=lambda q: 1.0)
