"""§5.4 label-smoothed loss that takes the log-softmax over the wrong axis: ``log_softmax(logits, axis=0)``
normalises each vocabulary column over the N target positions, where the paper's (PyTorch's) cross-entropy
normalises each position's logits over the V tokens of the vocabulary (axis -1). The smoothed target
q = (1 - eps) one_hot + eps / V and the mean over the non-padding targets are right.

Style: NumPy with a hand-written log-sum-exp, float64; label_smoothed_loss only.
"""

import numpy as np

from conformance import Conventions


def log_softmax(z, axis):
    top = z.max(axis=axis, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(axis=axis, keepdims=True))


class NumpyLoss:
    conventions = Conventions(mask="keep", dtype="float64", framework="numpy")

    def label_smoothed_loss(self, logits, targets, epsilon, pad_id):
        logits = np.asarray(logits, dtype=np.float64)
        targets = np.asarray(targets, dtype=np.int64)
        N, V = logits.shape
        q = np.full((N, V), epsilon / V)
        q[np.arange(N), targets] += 1.0 - epsilon
        logp = log_softmax(logits, axis=0)  # the bug: over the positions, not over the vocabulary
        per_token = -(q * logp).sum(axis=1)
        keep = targets != pad_id
        return float(per_token[keep].mean()) if keep.any() else 0.0


adapter = NumpyLoss()
