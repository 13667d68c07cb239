"""§3.3 position-wise feed-forward network with a squared ReLU: FFN(x) = max(0, x W1 + b1)^2 W2 + b2 (the Primer
activation), where the paper's FFN uses the ReLU itself: max(0, x W1 + b1) W2 + b2. Negative pre-activations still
give 0; a positive pre-activation a gives a^2 instead of a. Both linear layers and their biases are right.

Style: a torch.nn.Module: nn.Sequential of nn.Linear, a custom activation module and nn.Linear, weights loaded
transposed from the canonical x @ W orientation, float32; feed_forward only.
"""

import torch
from torch import nn

from conformance import Conventions


class SquaredReLU(nn.Module):
    def forward(self, x):
        return torch.relu(x).square()


class SequentialFFN:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch")

    @torch.no_grad()
    def feed_forward(self, x, weights):
        d_model, d_ff = weights["W1"].shape
        net = nn.Sequential(nn.Linear(d_model, d_ff), SquaredReLU(), nn.Linear(d_ff, d_model)).eval()
        for lin, i in ((net[0], "1"), (net[2], "2")):
            lin.weight.copy_(torch.from_numpy(weights[f"W{i}"]).T)
            lin.bias.copy_(torch.from_numpy(weights[f"b{i}"]))
        return net(torch.from_numpy(x)).numpy()


adapter = SequentialFFN()
