"""An adapter whose every part misbehaves differently: the run must still finish with a report.

positional_encoding raises; layer_norm returns a list; scaled_dot_product_attention returns weights
of the wrong shape; learning_rate returns NaN; label_smoothed_loss hangs.
"""

import time

import numpy as np

from conformance import Conventions


class Misbehaving:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float32", framework="numpy")

    def positional_encoding(self, n, d_model):
        raise ValueError("students forget things")

    def layer_norm(self, x, gamma, beta, eps):
        return x.tolist()

    def scaled_dot_product_attention(self, q, k, v, mask):
        return q, np.zeros((1, 1))

    def learning_rate(self, step, d_model, warmup):
        return float("nan")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        while True:
            time.sleep(0.01)


adapter = Misbehaving()
