"""Attention's softmax without the row maximum subtracted: e^s / sum e^s overflows float16 at scores above 11.1.

Breaks §3.2.1, softmax(Q K^T / sqrt(d_k)) V, in float16 only: e^s for a score s > ln 65,504 = 11.1 is inf there, and
inf / inf is NaN. Trained attention reaches such scores (the toy's sharp layer, large models' 20 and more). In float32
and bfloat16 (float32's range) it overflows only at scores above 88.7, which two checks reach: the per-head check's
scores and the dot products of 2^17.
"""

import math

import torch

from conformance.implementations.mutants._build import with_formulas


def attention(q, k, v, keep):
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)
    e = torch.exp(scores)  # the bug: no max subtracted first
    if keep is not None:
        e = e.masked_fill(~keep, 0.0)
    total = e.sum(-1, keepdim=True)
    weights = torch.where(total > 0, e / total, 0.0)
    return weights @ v, weights


adapter = with_formulas("half_softmax_without_max_subtraction", attention=attention)
