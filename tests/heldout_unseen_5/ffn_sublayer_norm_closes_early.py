"""§3.1 FFN sublayer whose LayerNorm call closes its parenthesis too early: ``self.norm(x) + self.ffn(x)`` where
``self.norm(x + self.ffn(x))`` was meant, so the output is LayerNorm(x) + FFN(x): the input is normalised on its
own and the feed-forward output is added after the norm, unnormalised, where the paper's sublayer output is
LayerNorm(x + FFN(x)). The FFN reads the raw input x, as in the paper (so this is not the pre-norm arrangement
LayerNorm(x) + FFN(LayerNorm(x)) either). The FFN itself (W1, b1, ReLU, W2, b2) and the LayerNorm (statistics, eps,
gamma, beta) are right.

Style: torch nn.Module classes (``FeedForward``, ``Norm``, ``FFNSublayer``) holding the canonical tensors as
parameters, float64; ffn_sublayer only.
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from conformance import Conventions


def _p(a):
    return nn.Parameter(torch.as_tensor(np.asarray(a, dtype=np.float64)), requires_grad=False)


class FeedForward(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.W1, self.b1, self.W2, self.b2 = _p(w["W1"]), _p(w["b1"]), _p(w["W2"]), _p(w["b2"])

    def forward(self, x):
        return F.relu(x @ self.W1 + self.b1) @ self.W2 + self.b2


class Norm(nn.Module):
    def __init__(self, gamma, beta, eps):
        super().__init__()
        self.gamma, self.beta, self.eps = _p(gamma), _p(beta), float(eps)

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.gamma * (x - mu) / torch.sqrt(var + self.eps) + self.beta


class FFNSublayer(nn.Module):
    def __init__(self, w, eps):
        super().__init__()
        self.ffn = FeedForward(w)
        self.norm = Norm(w["norm.gamma"], w["norm.beta"], eps)

    def forward(self, x):
        return self.norm(x) + self.ffn(x)


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="torch (nn.Module)")

    def ffn_sublayer(self, x, weights, eps):
        with torch.no_grad():
            block = FFNSublayer(weights, eps).eval()
            return block(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


adapter = Adapter()
