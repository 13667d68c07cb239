"""§3.3 position-wise feed-forward network that adds the first bias twice: its first ``nn.Linear`` is built with a
bias (loaded with b1) and the forward adds ``self.b1`` once more, so FFN(x) = max(0, x W1 + 2 b1) W2 + b2, where
the paper has max(0, x W1 + b1) W2 + b2. W1, W2, b2 and the ReLU are right; with b1 = 0 nothing shows.

Style: a torch.nn.Module (``nn.Linear`` layers in PyTorch's orientation plus a separate bias ``nn.Parameter``),
float32; feed_forward only.
"""

import torch
from torch import nn

from conformance import Conventions


class PositionwiseFFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.b1 = nn.Parameter(torch.zeros(d_ff))

    def load(self, w):
        with torch.no_grad():
            self.w_1.weight.copy_(torch.from_numpy(w["W1"]).T)
            self.w_1.bias.copy_(torch.from_numpy(w["b1"]))
            self.b1.copy_(torch.from_numpy(w["b1"]))
            self.w_2.weight.copy_(torch.from_numpy(w["W2"]).T)
            self.w_2.bias.copy_(torch.from_numpy(w["b2"]))
        return self

    def forward(self, x):
        return self.w_2(torch.relu(self.w_1(x) + self.b1))


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (nn.Module)")

    @torch.no_grad()
    def feed_forward(self, x, weights):
        d_model, d_ff = weights["W1"].shape
        with torch.random.fork_rng():
            ffn = PositionwiseFFN(d_model, d_ff).load(weights).eval()
        return ffn(torch.from_numpy(x)).numpy()


adapter = Adapter()
