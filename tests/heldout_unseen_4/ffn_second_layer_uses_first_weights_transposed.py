"""§3.3 position-wise feed-forward network whose second linear map reads the first weight matrix transposed: the
einsum of the output layer is written ``np.einsum("blf,df->bld", hidden, W1)`` (its index string adjusted to make
the shapes fit) where ``np.einsum("blf,fd->bld", hidden, W2)`` was meant, so FFN(x) = max(0, x W1 + b1) W1^T + b2,
where the paper's FFN is max(0, x W1 + b1) W2 + b2 (two different linear transformations). W2 is received and never
read; W1, b1, the ReLU and b2 are right.

Style: NumPy with np.einsum for both linear maps, float64; feed_forward only.
"""

import numpy as np

from conformance import Conventions


class EinsumFFN:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy (einsum)")

    def feed_forward(self, x, weights):
        W1, b1 = np.asarray(weights["W1"], np.float64), np.asarray(weights["b1"], np.float64)
        b2 = np.asarray(weights["b2"], np.float64)
        hidden = np.maximum(np.einsum("bld,df->blf", np.asarray(x, np.float64), W1) + b1, 0.0)
        return np.einsum("blf,df->bld", hidden, W1) + b2


adapter = EinsumFFN()
