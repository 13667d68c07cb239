"""§3.3 position-wise feed-forward network whose module adds its input back: the part returns x + FFN(x) =
x + max(0, x W1 + b1) W2 + b2, where the paper's FFN(x) is max(0, x W1 + b1) W2 + b2 alone (the residual belongs
to the sublayer around it, §3.1, which would then add x a second time).

Style: a torch.nn.Module with nn.Linear layers (weights loaded transposed from the canonical x @ W orientation),
float64; feed_forward only.
"""

import numpy as np
import torch
from torch import nn

from conformance import Conventions


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def load(self, weights):
        with torch.no_grad():
            for lin, W, b in ((self.w_1, "W1", "b1"), (self.w_2, "W2", "b2")):
                lin.weight.copy_(torch.as_tensor(np.asarray(weights[W])).t())
                lin.bias.copy_(torch.as_tensor(np.asarray(weights[b])))
        return self

    def forward(self, x):
        residual = x
        x = self.w_2(torch.relu(self.w_1(x)))
        return x + residual  # the bug: the sublayer's residual added inside the FFN


class ModuleAdapter:
    conventions = Conventions(mask="keep", dtype="float64", framework="torch (nn.Module, float64)")

    @torch.no_grad()
    def feed_forward(self, x, weights):
        d_model, d_ff = np.shape(weights["W1"])
        ffn = PositionwiseFeedForward(d_model, d_ff).double().load(weights).eval()
        return ffn(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


adapter = ModuleAdapter()
