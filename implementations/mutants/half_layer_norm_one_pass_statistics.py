"""LayerNorm's variance in one pass, mean(x^2) - mean(x)^2, in the half dtype: it cancels to noise far from zero.

Breaks §3.1 (the lesson's LayerNorm: sigma^2 = mean((x - mu)^2)) in half precision: for a row of mean 200 and spread
1, mean(x^2) = 40,001 is held to a step of 32 in float16 (256 in bfloat16), so the difference that is the variance is
noise, negative or zero. Fused kernels compute it in one pass, in float32. In float32 and float64 runs, on rows near
zero, this is the formula.
"""

import torch

from conformance.implementations.mutants._build import low, with_formulas


def layer_norm(x, gamma, beta, eps):
    h = low(x)
    mu = h.mean(-1, keepdim=True)
    var = (h * h).mean(-1, keepdim=True) - mu * mu  # the bug: one pass, in the half dtype
    return (gamma * (h - mu) / torch.sqrt(var + eps) + beta).to(x.dtype)


adapter = with_formulas("half_layer_norm_one_pass_statistics", layer_norm=layer_norm)
