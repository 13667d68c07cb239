"""Attention projections read each matrix as (out, in): x W^T instead of x W, as an nn.Linear loaded untransposed.

Violates §3.2.2: head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V) and the output Concat(...) W^O, "where the
projections are parameter matrices W_i^Q in R^(d_model x d_k)": a row of activations multiplies W from
the left, so head i reads columns [i d_k, (i + 1) d_k) of W_Q. ``nn.Linear.weight`` stores the transpose;
copying the canonical W into it without ``.T`` computes x W^T, whose head i reads rows of W_Q instead.
"""

from conformance.implementations.numpy_impl.adapter import NumpyAdapter


class ProjectionsTransposed(NumpyAdapter):
    def project(self, x, W, b):
        return x @ W.T + b  # the bug: W read as (out, in)


adapter = ProjectionsTransposed()
