"""§3.3 position-wise FFN with a ReLU after the second linear map as well: max(0, max(0, x W1 + b1) W2 + b2),
where the paper has no activation on the output (a term doubled: the activation applied twice). A torch.nn module."""

import torch
from torch import nn

from conformance import Conventions


class PositionwiseFFN(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.inner = nn.Linear(*w["W1"].shape).double()
        self.outer = nn.Linear(*w["W2"].shape).double()
        with torch.no_grad():
            self.inner.weight.copy_(torch.from_numpy(w["W1"].T))
            self.inner.bias.copy_(torch.from_numpy(w["b1"]))
            self.outer.weight.copy_(torch.from_numpy(w["W2"].T))
            self.outer.bias.copy_(torch.from_numpy(w["b2"]))
        self.net = nn.Sequential(self.inner, nn.ReLU(), self.outer, nn.ReLU())  # the bug: the last ReLU

    def forward(self, x):
        return self.net(x)


class Adapter:
    conventions = Conventions(dtype="float64", framework="torch")

    def feed_forward(self, x, weights):
        with torch.no_grad():
            return PositionwiseFFN(weights)(torch.from_numpy(x)).numpy()


adapter = Adapter()
