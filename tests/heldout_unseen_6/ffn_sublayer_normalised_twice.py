"""§3.1 FFN sublayer whose output goes through its LayerNorm twice: the ``FFNBlock`` module already returns
LayerNorm(x + FFN(x)), and the sublayer is assembled as ``nn.Sequential(FFNBlock(ffn, norm), norm)`` (the norm
listed again as the block's output norm), so the output is LayerNorm(LayerNorm(x + FFN(x))), the same gamma and
beta applied twice: gamma * standardise(gamma * z_hat + beta) + beta, where the paper's sublayer output is
LayerNorm(x + FFN(x)) = gamma * z_hat + beta. Right wherever gamma = 1 and beta = 0 (a LayerNorm of identity
parameters is idempotent up to eps). The FFN (W1, b1, ReLU, W2, b2), the residual and the LayerNorm's statistics and
eps are right.

Style: torch ``nn.Module`` classes (``nn.Linear``, ``nn.LayerNorm``, ``nn.Sequential``) loaded through nn.Linear's
orientation, float64, sequence-first; ffn_sublayer only.
"""

import numpy as np
import torch
from torch import nn

from conformance import Conventions


def _t(a):
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


class FFNBlock(nn.Module):
    def __init__(self, ffn: nn.Module, norm: nn.Module):
        super().__init__()
        self.ffn, self.norm = ffn, norm

    def forward(self, x):
        return self.norm(x + self.ffn(x))


class Adapter:
    conventions = Conventions(mask="keep", batch_first=False, dtype="float64", framework="torch (nn.Module)")

    def ffn_sublayer(self, x, weights, eps):
        w = {name: _t(a) for name, a in weights.items()}
        d, d_ff = w["W1"].shape
        ffn = nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d)).double()
        norm = nn.LayerNorm(d, eps=eps).double()
        with torch.no_grad():
            ffn[0].weight.copy_(w["W1"].T), ffn[0].bias.copy_(w["b1"])
            ffn[2].weight.copy_(w["W2"].T), ffn[2].bias.copy_(w["b2"])
            norm.weight.copy_(w["norm.gamma"]), norm.bias.copy_(w["norm.beta"])
            sublayer = nn.Sequential(FFNBlock(ffn, norm), norm).eval()
            return sublayer(_t(x)).numpy()


adapter = Adapter()
