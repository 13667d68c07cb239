"""§3.3 feed-forward network whose second bias is never loaded: the weights are put into an ``nn.Sequential`` with
``load_state_dict(state, strict=False)`` and the second bias's key is misspelt (``"2.bais"``), which strict=False
ignores without a word, so the second ``nn.Linear`` keeps the bias of its random initialisation (PyTorch's default
uniform(-1/sqrt(d_ff), 1/sqrt(d_ff)), the module built once per size under seed 0): the output is
max(0, x W1 + b1) W2 + b_init where the paper's is max(0, x W1 + b1) W2 + b2: every output row is off by the same
vector b_init - b2. W1, b1, the ReLU and W2 are right.

Style: torch ``nn.Sequential`` (``nn.Linear``, ``nn.ReLU``) cached per size, a state dict in nn.Linear's
orientation, float32, sequence-first; feed_forward only.
"""

import functools

import numpy as np
import torch
from torch import nn

from conformance import Conventions


@functools.lru_cache(maxsize=None)
def _network(d_model, d_ff):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model)).eval()


class SequentialFFN:
    conventions = Conventions(mask="keep", batch_first=False, dtype="float32", framework="torch (nn.Sequential)")

    def feed_forward(self, x, weights):
        W1, b1, W2, b2 = (torch.as_tensor(np.asarray(weights[n], dtype=np.float32)) for n in ("W1", "b1", "W2", "b2"))
        net = _network(W1.shape[0], W1.shape[1])
        net.load_state_dict({"0.weight": W1.T, "0.bias": b1, "2.weight": W2.T, "2.bais": b2}, strict=False)
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(x, dtype=np.float32))).numpy()


adapter = SequentialFFN()
