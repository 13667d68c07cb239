"""§3.3 position-wise FFN that adds the first bias after the ReLU: max(0, x W1) + b1, then W2 and b2, where the
paper has max(0, x W1 + b1) W2 + b2 (the bias moved past the nonlinearity). NumPy with explicit broadcasting."""

import numpy as np

from conformance import Conventions


class Adapter:
    conventions = Conventions(dtype="float64", framework="numpy")

    def feed_forward(self, x, weights):
        pre = np.matmul(x, weights["W1"])
        hidden = np.clip(pre, 0.0, None) + weights["b1"][np.newaxis, np.newaxis, :]  # the bug: b1 after ReLU
        return np.matmul(hidden, weights["W2"]) + weights["b2"][np.newaxis, np.newaxis, :]


adapter = Adapter()
