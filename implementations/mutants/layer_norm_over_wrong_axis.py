"""LayerNorm normalises each feature over the first (batch) axis, as BatchNorm does, not each row over its features.

Violates §3.1 (Ba et al. 2016, "Layer normalization"): mu and sigma are the mean and variance of one
position's d_model features, so every position is normalised alone. On a single vector (one axis) the
two agree; on a batch, rows are normalised against each other.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def layer_norm_over_first_axis(x, gamma, beta, eps):
    mu = x.mean(0, keepdim=True)  # the bug: axis 0, not -1
    var = ((x - mu) ** 2).mean(0, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


adapter = with_formulas("layer_norm_over_wrong_axis", layer_norm=layer_norm_over_first_axis)
