"""§5.4 label-smoothed loss that uses the raw logits as log-probabilities: loss = -sum_k q(k) * z_k, where the
paper's cross-entropy against the smoothed target q = (1 - eps) one_hot + eps / V takes the log-softmax of the
logits first: -sum_k q(k) * log softmax(z)_k. The log-sum-exp normaliser is missing (the loss changes when a
constant is added to every logit, and can be negative). The smoothed target and the mean over the non-padding
targets are right.

Style: NumPy (np.eye one-hot rows, boolean indexing for the padding), float64; label_smoothed_loss only.
"""

import numpy as np

from conformance import Conventions


class RawLogitLoss:
    conventions = Conventions(mask="keep", batch_first=True, dtype="float64", framework="numpy")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        V = logits.shape[-1]
        q = (1.0 - epsilon) * np.eye(V)[targets] + epsilon / V
        per_token = -(q * logits).sum(axis=-1)
        return float(per_token[targets != pad_id].mean())


adapter = RawLogitLoss()
