"""LayerNorm in the half dtype throughout, eps included: an eps of 1e-12 is 0 in float16; a constant row is 0 / 0.

Breaks §3.1 (gamma (x - mu) / sqrt(sigma^2 + eps) + beta: eps keeps the root above 0) in float16: 1e-12 is below
float16's smallest number (6e-8), so sigma^2 + eps is 0 for a constant row and the output NaN. torch's layer_norm
computes its statistics in float32. In bfloat16 (float32's range) eps survives; its statistics are still coarse.
"""

import torch

from conformance.implementations.mutants._build import low, with_formulas


def layer_norm(x, gamma, beta, eps):
    h = low(x)
    mu = h.mean(-1, keepdim=True)
    var = ((h - mu) ** 2).mean(-1, keepdim=True)
    eps_h = torch.tensor(eps, dtype=h.dtype)  # the bug: eps in the half dtype (0 in float16 for 1e-12)
    return (gamma * (h - mu) / torch.sqrt(var + eps_h) + beta).to(x.dtype)


adapter = with_formulas("half_layer_norm_eps_underflows", layer_norm=layer_norm)
