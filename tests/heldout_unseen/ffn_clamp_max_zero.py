"""§3.3 position-wise feed-forward network whose ReLU is written ``torch.clamp(hidden, max=0)`` instead of
``min=0``: it keeps the negative part, min(0, x W1 + b1), and zeroes the positive one, so FFN(x) =
min(0, x W1 + b1) W2 + b2 where the paper has max(0, x W1 + b1) W2 + b2 (the same as -ReLU(-(x W1 + b1))).

Style: torch.nn.functional code (F.linear with transposed canonical weights), float32; feed_forward only.
"""

import numpy as np
import torch
import torch.nn.functional as F

from conformance import Conventions


class Functional:
    conventions = Conventions(mask="keep", dtype="float32", framework="torch (functional)")

    @torch.no_grad()
    def feed_forward(self, x, weights):
        p = {n: torch.as_tensor(np.asarray(a, dtype=np.float32)) for n, a in weights.items()}
        x = torch.as_tensor(np.asarray(x, dtype=np.float32))
        hidden = F.linear(x, p["W1"].t(), p["b1"])
        hidden = torch.clamp(hidden, max=0.0)  # the bug: max=0 where ReLU is min=0
        return F.linear(hidden, p["W2"].t(), p["b2"]).numpy()


adapter = Functional()
