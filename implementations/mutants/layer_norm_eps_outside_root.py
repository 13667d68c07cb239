"""LayerNorm adds eps outside the square root: (x - mu) / (sqrt(sigma^2) + eps).

Violates §3.1 (Ba et al. 2016) as the lesson's Step 3 writes it: gamma * (x - mu) / sqrt(sigma^2 + eps)
+ beta, eps inside the root (as ``torch.nn.LayerNorm`` computes). The two differ most on rows of small
variance, where eps is not negligible next to sigma^2.
"""

import torch

from conformance.implementations.mutants._build import with_formulas


def layer_norm_eps_outside(x, gamma, beta, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mu) / (torch.sqrt(var) + eps) + beta


adapter = with_formulas("layer_norm_eps_outside_root", layer_norm=layer_norm_eps_outside)
