"""§3.3 position-wise feed-forward network with a hand-written ReLU that forgets its halving: the activation is
``z + z.abs()`` where ReLU(z) = (z + |z|) / 2, so the hidden layer is 2 max(0, x W1 + b1) and
FFN(x) = 2 max(0, x W1 + b1) W2 + b2, where the paper's FFN is max(0, x W1 + b1) W2 + b2. Negative pre-activations
still give 0; positive ones are doubled. Both linear maps and both biases are right.

Style: torch functional code on tensors (torch.addmm on the flattened positions), float32; feed_forward only.
"""

import numpy as np
import torch

from conformance import Conventions


def relu(z):
    return z + z.abs()  # (z + |z|) / 2


def feed_forward(x, weights):
    t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32))
    x = t(x)
    flat = x.reshape(-1, x.shape[-1])
    with torch.no_grad():
        hidden = relu(torch.addmm(t(weights["b1"]), flat, t(weights["W1"])))
        out = torch.addmm(t(weights["b2"]), hidden, t(weights["W2"]))
    return out.reshape(x.shape).numpy()


class Adapter:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="torch (functional)")
    feed_forward = staticmethod(feed_forward)


adapter = Adapter()
