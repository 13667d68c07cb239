"""§3.3 position-wise feed-forward network without its second bias: FFN(x) = max(0, x W1 + b1) W2, where the
paper's FFN is max(0, x W1 + b1) W2 + b2. b2 is received and never added (the second linear layer written
bias-free), so every position's output is off by b2; the first layer, its bias and the ReLU are right.

Style: NumPy driven by a generator that walks the positions one (batch, position) vector at a time and yields each
output vector, float64; feed_forward only.
"""

import numpy as np

from conformance import Conventions


def _positions(x):
    B, L, _ = x.shape
    for b in range(B):
        for t in range(L):
            yield b, t, x[b, t]


class PositionWalker:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def feed_forward(self, x, weights):
        W1, b1, W2 = weights["W1"], weights["b1"], weights["W2"]
        out = np.empty((x.shape[0], x.shape[1], W2.shape[1]), dtype=np.float64)
        for b, t, vec in _positions(x):
            hidden = np.maximum(0.0, vec @ W1 + b1)
            out[b, t] = hidden @ W2
        return out


adapter = PositionWalker()
