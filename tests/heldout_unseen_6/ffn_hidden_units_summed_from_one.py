"""§3.3 feed-forward network written as a sum over its hidden units whose loop starts at 1: the output is accumulated
one hidden unit at a time, b2 + sum_j max(0, x W1[:, j] + b1[j]) W2[j, :], with ``for j in range(1, d_ff)`` (the
units numbered from 1, as in a formula) where ``range(d_ff)`` was meant, so hidden unit 0 (column 0 of W1, b1[0],
row 0 of W2) never contributes: the output is FFN(x) - max(0, x W1[:, 0] + b1[0]) W2[0, :], where the paper's
FFN(x) = max(0, x W1 + b1) W2 + b2 sums over all d_ff units. Right wherever that unit is inactive (its
pre-activation <= 0). The other d_ff - 1 units, the ReLU, b1 and b2 are right.

Style: NumPy in float64, a Python loop over the hidden units with rank-one updates (``np.maximum``, broadcasting);
feed_forward only.
"""

import numpy as np

from conformance import Conventions


class UnitLoopFFN:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy (loop over units)")

    def feed_forward(self, x, weights):
        x = np.asarray(x, dtype=np.float64)
        W1, b1, W2, b2 = (np.asarray(weights[n], dtype=np.float64) for n in ("W1", "b1", "W2", "b2"))
        out = np.broadcast_to(b2, x.shape[:-1] + b2.shape).copy()
        for j in range(1, W1.shape[1]):  # hidden units 1 .. d_ff
            out += np.maximum(x @ W1[:, j] + b1[j], 0.0)[..., None] * W2[j]
        return out


adapter = UnitLoopFFN()
