"""§3.1 LayerNorm that applies the gain twice: ``F.layer_norm(x, (d,), weight=gamma, eps=eps)`` already returns
gamma * x_hat, and the module then applies its own affine step ``gamma * y + beta`` on top, so the output is
gamma^2 * (x - mu) / sqrt(sigma^2 + eps) + beta, where the paper's layer normalisation (Ba et al., 2016) applies
the gain once: gamma * x_hat + beta. The mean, the biased variance, eps inside the square root and beta are right;
right whenever every gain is 0 or 1 (gamma = 1 is its initial value).

Style: a torch.nn.Module with an ``Affine`` sub-module, float32; layer_norm only.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions


class Affine(nn.Module):
    def forward(self, y, gamma, beta):
        return gamma * y + beta


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine = Affine()

    def forward(self, x, gamma, beta, eps):
        y = F.layer_norm(x, (x.shape[-1],), weight=gamma, bias=None, eps=eps)
        return self.affine(y, gamma, beta)


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (nn.Module)")

    def __init__(self):
        self.norm = Norm().eval()

    def layer_norm(self, x, gamma, beta, eps):
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32))
        with torch.no_grad():
            return self.norm(t(x), t(gamma), t(beta), float(eps)).numpy()


adapter = Adapter()
