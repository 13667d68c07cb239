"""§3.3 position-wise feed-forward network whose second linear map averages instead of summing: the product with W2
is written by broadcasting, ``(hidden[..., :, None] * W2).mean(axis=-2)``, where ``.sum(axis=-2)`` (a matrix
product) was meant, so FFN(x) = max(0, x W1 + b1) W2 / d_ff + b2: the second layer's output (before b2) is d_ff
times too small, where the paper's FFN is max(0, x W1 + b1) W2 + b2. The first linear map, b1, the ReLU and b2 are
right.

Style: NumPy broadcasting (no matmul in the second layer), float64, a class adapter; feed_forward only.
"""

import numpy as np

from conformance import Conventions


class BroadcastFFN:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy (broadcasting)")

    def feed_forward(self, x, weights):
        w = {name: np.asarray(a, dtype=np.float64) for name, a in weights.items()}
        x = np.asarray(x, dtype=np.float64)
        hidden = np.maximum(x @ w["W1"] + w["b1"], 0.0)  # (B, L, d_ff)
        out = (hidden[..., :, None] * w["W2"]).mean(axis=-2)  # (B, L, d_model)
        return out + w["b2"]


adapter = BroadcastFFN()
