"""Attention scales after the matmul: Q K^T overflows float16 before the 1/sqrt(d_k) that would have brought it back.

Breaks §3.2.1 in float16 only ("for large values of d_k, the dot products grow large in magnitude ... we scale the dot
products by 1/sqrt(d_k)"): at d_k = 64 a dot product beyond 65,504 is inf in float16 although its scaled score (/8)
is not. Scaling Q first (the reference, PyTorch's scaled_dot_product_attention scales Q and K) keeps it finite. In
float32 and bfloat16 the same order is the formula.
"""

import math

import torch

from conformance.implementations.mutants._build import with_formulas


def attention(q, k, v, keep):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # the bug in float16: the matmul overflows first
    if keep is None:
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    has_key = keep.any(-1, keepdim=True)
    scores = scores.masked_fill(~keep, float("-inf")).masked_fill(~has_key, 0.0)
    weights = torch.where(has_key, torch.softmax(scores, dim=-1), 0.0)
    return weights @ v, weights


adapter = with_formulas("half_scale_after_overflowing_matmul", attention=attention)
